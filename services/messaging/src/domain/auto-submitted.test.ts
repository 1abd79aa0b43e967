import { automaticMail, type HeaderLine } from './auto-submitted.js';

const header = (line: string): HeaderLine => ({ key: line.slice(0, line.indexOf(':')).toLowerCase(), line });
const automatic = (...lines: string[]) => automaticMail(lines.map(header));

describe('automaticMail (RFC 3834)', () => {
  test.each([
    'Auto-Submitted: auto-replied',
    'Auto-Submitted: auto-generated',
    'auto-submitted: Auto-Notified; owner-email="a@b.example"',
    'Auto-Submitted: auto-replied (vacation)',
    'Precedence: bulk',
    'Precedence: JUNK',
    'Precedence: list',
    'Precedence: auto_reply',
    'X-Autoreply: yes',
    'X-Autorespond: Out of office',
  ])('%s marks the mail automatic', (line) => {
    expect(automatic('Subject: Re: hello', line)).toBe(line);
  });

  test.each([
    'Auto-Submitted: no',
    'Auto-Submitted: No (a person)',
    'Precedence: first-class',
    'Precedence: normal',
    'X-Auto-Response-Suppress: All',
  ])('%s is mail a person sent', (line) => {
    expect(automatic('Subject: Re: hello', line)).toBeUndefined();
  });

  test('a folded header is read unfolded', () => {
    expect(automatic('Auto-Submitted:\r\n auto-replied')).toBe('Auto-Submitted: auto-replied');
    expect(automatic('Subject: hi')).toBeUndefined();
  });
});
