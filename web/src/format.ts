export const seconds = (micros: number): string => (micros / 1e6).toFixed(2);
export const date = (micros: number): string =>
  new Date(micros / 1000).toISOString().replace('T', ' ').slice(0, 19);
export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Record<string, string> = {},
  ...children: (Node | string)[]
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  node.append(...children);
  return node;
}
export const formatValue = (v: unknown): string =>
  typeof v === 'number'
    ? Number.isInteger(v)
      ? String(v)
      : v.toFixed(3)
    : typeof v === 'object'
      ? JSON.stringify(v)
      : String(v);
