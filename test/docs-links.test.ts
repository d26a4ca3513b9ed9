/**
 * The README and the pages under docs/ are read in a clone, on GitHub or in an editor: every relative
 * link among them must reach a file of the repository, and a link to a heading (`page.md#heading`) a
 * heading that page has, named as GitHub names its anchors. Links outside the repository (http, mailto)
 * are not followed; code (fenced blocks, `inline`) is not read for links.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, it } from 'node:test';
import { REPO_ROOT } from './helpers/paths.js';

function* markdownFiles(dir: string): Generator<string> {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) yield* markdownFiles(path);
    else if (name.endsWith('.md')) yield path;
  }
}

/** The text without its code: fenced blocks and inline code become blank, so their brackets are no links. */
function prose(text: string): string {
  return text.replace(/^```[^]*?^```/gm, '').replace(/`[^`\n]*`/g, '');
}

/** Every link target of a page: `[text](target)` and `![alt](target)`, the text allowed to span lines. */
function linkTargets(text: string): string[] {
  return [...prose(text).matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)].map((m) => m[1]!);
}

/** The anchors GitHub gives a page's headings: lower case, punctuation dropped, spaces as hyphens. */
function headingAnchors(text: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const m of text.replace(/^```[^]*?^```/gm, '').matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const base = m[1]!
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    anchors.add(count === 0 ? base : `${base}-${count}`);
  }
  return anchors;
}

const pages = [join(REPO_ROOT, 'README.md'), ...markdownFiles(join(REPO_ROOT, 'docs'))];

describe('links in the README and docs/', () => {
  it('finds the pages', () => {
    assert.ok(pages.length > 10, `${pages.length} pages`);
  });

  for (const page of pages) {
    const name = relative(REPO_ROOT, page);
    it(`${name}: every relative link reaches a file, and every anchor a heading`, () => {
      const broken: string[] = [];
      const text = readFileSync(page, 'utf8');
      for (const target of linkTargets(text)) {
        if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue;
        const [path, anchor] = target.split('#', 2) as [string, string | undefined];
        const file = path === '' ? page : resolve(dirname(page), decodeURIComponent(path));
        if (!file.startsWith(REPO_ROOT) || !existsSync(file)) {
          broken.push(`${target}: no such file`);
          continue;
        }
        if (anchor !== undefined && file.endsWith('.md')) {
          const anchors = headingAnchors(readFileSync(file, 'utf8'));
          if (!anchors.has(anchor)) broken.push(`${target}: no heading with that anchor`);
        }
      }
      assert.deepEqual(broken, [], `${name} has links that lead nowhere`);
    });
  }
});

/** The repository's paths a page names as code (`src/store/registry.ts`, `test/fixtures/esmini/`). */
function codePaths(text: string): string[] {
  const paths: string[] = [];
  for (const m of text.matchAll(/`((?:src|test|web|bench|docs|examples|scripts)\/[^`\s*]+)`/g)) {
    const path = m[1]!.replace(/[:,.;)]+$/, '');
    // A pattern (`TABLE/run=ID/...`) or a placeholder (`<source>`) names no one file.
    if (!/[<>{}]|\.\.\.|=/.test(path)) paths.push(path);
  }
  return paths;
}

describe('files the README and docs/ name as code', () => {
  for (const page of pages) {
    const name = relative(REPO_ROOT, page);
    it(`${name}: every path of the repository it names is there`, () => {
      const missing = codePaths(readFileSync(page, 'utf8')).filter(
        (path) => !existsSync(join(REPO_ROOT, path)),
      );
      assert.deepEqual(missing, [], `${name} names files that moved or are gone`);
    });
  }
});
