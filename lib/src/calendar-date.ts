// SPEC.md "Type inference": the date forms a string value may take.

// YYYY-MM-DD or YYYY-MM-DDTHH:MM:SS[.sss]Z, exactly as SPEC.md writes it.
const DATE_PATTERN = /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2}):(\d{2})(?:\.\d{3})?Z)?$/;

/** YYYY-MM-DD or YYYY-MM-DDTHH:MM:SS[.sss]Z on a real calendar date (leap years; no year 0000). */
export function isCalendarDate(s: string): boolean {
  const m = DATE_PATTERN.exec(s);
  if (!m) return false;
  const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])];
  if (year === 0 || month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return false;
  if (m[4] === undefined) return true;
  return Number(m[4]) <= 23 && Number(m[5]) <= 59 && Number(m[6]) <= 59;
}

function daysInMonth(year: number, month: number): number {
  if (month === 2) return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28;
  return [4, 6, 9, 11].includes(month) ? 30 : 31;
}

/**
 * Time and zone of a full ISO 8601 date-time, the only form `within`/`olderThan` read (SPEC.md "Type inference"):
 * seconds required, a fraction of up to nine digits, `Z` or an offset. A source for RegExp and for SQL regexes.
 */
export const ISO_TIME =
  'T(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:[.][0-9]{1,9})?(?:Z|[+-](?:0[0-9]|1[0-4]):[0-5][0-9])';

/** The shape of a full ISO 8601 date-time; the date part is checked with isCalendarDate. */
export const ISO_DATE_TIME = new RegExp(`^[0-9]{4}-[0-9]{2}-[0-9]{2}${ISO_TIME}$`);
