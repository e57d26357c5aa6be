import { describe, expect, it } from 'vitest';

import { OriginPolicy, originAllowed } from '../../server/origin.ts';

describe('originAllowed', () => {
  it('allows no Origin, loopback origins and listed ones', () => {
    expect(originAllowed(undefined)).toBe(true);
    for (const o of ['http://localhost:3000', 'http://127.0.0.1', 'https://[::1]:8443', 'http://app.localhost:5173', 'http://127.1.2.3:80'])
      expect(originAllowed(o)).toBe(true);
    expect(originAllowed('https://evil.example')).toBe(false);
    expect(originAllowed('http://localhost.evil.example')).toBe(false);
    expect(originAllowed('null')).toBe(false);
    expect(originAllowed('https://app.example', ['https://app.example'])).toBe(true);
    expect(originAllowed('https://evil.example', ['*'])).toBe(true);
  });
});

describe('OriginPolicy', () => {
  const policy = new OriginPolicy({ machineHostname: 'gpu-box', allowedHosts: ['gym.example'], allowedOrigins: ['https://dash.example/'] });

  it('#hostAllowed: IP literals, loopback names, the machine and listed names', () => {
    for (const h of [undefined, '127.0.0.1:8765', 'localhost:8765', '[::1]:8765', '10.0.0.5:8765', 'gpu-box:8765', 'GYM.example', '[2001:db8::1]:1'])
      expect(policy.hostAllowed(h)).toBe(true);
    for (const h of ['evil.example', 'evil.example:8765', 'localhost.evil.example', '', 'a b', 'x/y']) expect(policy.hostAllowed(h)).toBe(false);
  });

  it('#hostAllowed: anything when Host is not checked or * is allowed', () => {
    expect(new OriginPolicy({ checkHost: false }).hostAllowed('evil.example')).toBe(true);
    expect(new OriginPolicy({ allowedHosts: ['*'] }).hostAllowed('evil.example')).toBe(true);
  });

  it('#originAllowed: a page on a trusted Host may call its own server, a rebound name may not', () => {
    expect(policy.originAllowed('http://10.0.0.5:8765', '10.0.0.5:8765')).toBe(true);
    expect(policy.originAllowed('http://10.0.0.5:9999', '10.0.0.5:8765')).toBe(false);
    expect(policy.originAllowed('https://dash.example', 'evil.example')).toBe(true);
    const tokenServer = new OriginPolicy({ checkHost: false, machineHostname: 'gpu-box' });
    expect(tokenServer.originAllowed('http://evil.example:8765', 'evil.example:8765')).toBe(false);
    expect(tokenServer.originAllowed('http://gpu-box:8765', 'gpu-box:8765')).toBe(true);
  });

  it('#check names the flag that would allow a refused request', () => {
    expect(policy.check({ host: 'evil.example:1' })).toMatchObject({ allowed: false, reason: expect.stringContaining('--allow-host evil.example') });
    expect(policy.check({ host: '127.0.0.1:1', origin: 'https://evil.example' })).toMatchObject({
      allowed: false,
      reason: expect.stringContaining('--allow-origin https://evil.example'),
    });
    expect(policy.check({ host: '127.0.0.1:1', origin: 'http://localhost:3000' })).toEqual({ allowed: true });
  });
});
