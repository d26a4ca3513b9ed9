import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  canonicalLocationToUnreal,
  canonicalPositionToUnity,
  canonicalQuaternionToUnity,
  canonicalToUnrealRotator,
  degToRad,
  eulerToQuaternion,
  quaternionToEuler,
  sumoAngleToYaw,
  unityPositionToCanonical,
  unityQuaternionToCanonical,
  unrealLocationToCanonical,
  unrealRotatorToCanonical,
  wrapAngle,
  yawToSumoAngle,
  type Quaternion,
  type Vec3,
} from '../src/model/units.js';

/**
 * The known pose every conversion is pinned with: a car 1 m east, 2 m north, 3 m up, heading
 * north-east and climbing at 10 degrees. In the canonical frame its nose points along
 * (cos10 cos45, cos10 sin45, sin10).
 */
const CLIMB = degToRad(10);
const NOSE: Vec3 = {
  x: Math.cos(CLIMB) * Math.SQRT1_2,
  y: Math.cos(CLIMB) * Math.SQRT1_2,
  z: Math.sin(CLIMB),
};

function rotate(q: Quaternion, v: Vec3): Vec3 {
  // v' = q v q*, expanded.
  const { x, y, z, w } = q;
  const tx = 2 * (y * v.z - z * v.y);
  const ty = 2 * (z * v.x - x * v.z);
  const tz = 2 * (x * v.y - y * v.x);
  return {
    x: v.x + w * tx + (y * tz - z * ty),
    y: v.y + w * ty + (z * tx - x * tz),
    z: v.z + w * tz + (x * ty - y * tx),
  };
}

function close(actual: Vec3 | number, expected: Vec3 | number, what: string): void {
  const a = typeof actual === 'number' ? [actual] : [actual.x, actual.y, actual.z];
  const e = typeof expected === 'number' ? [expected] : [expected.x, expected.y, expected.z];
  a.forEach((v, i) => assert.ok(Math.abs(v - e[i]!) < 1e-9, `${what}: got ${a}, expected ${e}`));
}

describe('units and frames', () => {
  it('canonical Euler angles: yaw counter-clockwise from +x, positive pitch is nose down (intrinsic Z-Y-X)', () => {
    const q = eulerToQuaternion({ roll: 0, pitch: -CLIMB, yaw: Math.PI / 4 });
    close(rotate(q, { x: 1, y: 0, z: 0 }), NOSE, 'nose');
    const back = quaternionToEuler(q);
    close(back.yaw, Math.PI / 4, 'yaw');
    close(back.pitch, -CLIMB, 'pitch');
    close(back.roll, 0, 'roll');
  });

  it('Unreal: centimetres, y to the right, FRotator in degrees', () => {
    // In Unreal the same car is at (100, -200, 300) cm, yaw -45 (clockwise-positive), pitch +10 (nose up).
    close(unrealLocationToCanonical({ x: 100, y: -200, z: 300 }), { x: 1, y: 2, z: 3 }, 'location');
    const e = unrealRotatorToCanonical({ roll: 0, pitch: 10, yaw: -45 });
    close(rotate(eulerToQuaternion(e), { x: 1, y: 0, z: 0 }), NOSE, 'nose');
    close(canonicalLocationToUnreal({ x: 1, y: 2, z: 3 }), { x: 100, y: -200, z: 300 }, 'back');
    const r = canonicalToUnrealRotator(e);
    close({ x: r.roll, y: r.pitch, z: r.yaw }, { x: 0, y: 10, z: -45 }, 'rotator back');
  });

  it('Unity: metres, left-handed, y up, z forward', () => {
    // Unity's position of the car: x right = -north, y up, z forward = east.
    close(unityPositionToCanonical({ x: -2, y: 3, z: 1 }), { x: 1, y: 2, z: 3 }, 'position');
    close(canonicalPositionToUnity({ x: 1, y: 2, z: 3 }), { x: -2, y: 3, z: 1 }, 'position back');
    // Unity's rotation for the pose: Quaternion.Euler(-10, -45, 0) = yaw about y, then pitch about x.
    const half = (deg: number): [number, number] => [
      Math.cos(degToRad(deg) / 2),
      Math.sin(degToRad(deg) / 2),
    ];
    const [cy, sy] = half(-45);
    const [cx, sx] = half(-10);
    const qy = { x: 0, y: sy, z: 0, w: cy };
    const qx = { x: sx, y: 0, z: 0, w: cx };
    const unity: Quaternion = {
      w: qy.w * qx.w - qy.y * 0,
      x: qy.w * qx.x,
      y: qy.y * qx.w,
      z: -qy.y * qx.x,
    };
    // Unity's forward (0,0,1) rotated, mapped to canonical, is the canonical nose.
    close(unityPositionToCanonical(rotate(unity, { x: 0, y: 0, z: 1 })), NOSE, 'unity nose');
    const canonical = unityQuaternionToCanonical(unity);
    close(rotate(canonical, { x: 1, y: 0, z: 0 }), NOSE, 'converted quaternion');
    const back = canonicalQuaternionToUnity(canonical);
    close({ x: back.x, y: back.y, z: back.z }, { x: unity.x, y: unity.y, z: unity.z }, 'quaternion back');
  });

  it('SUMO: degrees clockwise from north', () => {
    close(sumoAngleToYaw(45), Math.PI / 4, 'north-east');
    close(sumoAngleToYaw(0), Math.PI / 2, 'north');
    close(sumoAngleToYaw(270), Math.PI, 'west');
    close(yawToSumoAngle(Math.PI / 4), 45, 'back');
    close(yawToSumoAngle(-Math.PI / 2), 180, 'south');
  });

  it('wraps angles into (-pi, pi]', () => {
    close(wrapAngle(3 * Math.PI), Math.PI, '3pi');
    close(wrapAngle(-Math.PI), Math.PI, '-pi');
    close(wrapAngle(7), 7 - 2 * Math.PI, '7');
  });
});
