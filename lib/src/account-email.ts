// Identity compares account emails this way, and the login throttle keys attempts the same way:
// any spelling that reaches the same account must count against the same budget.

/** The spelling stored for a new account: as given, minus surrounding whitespace. */
export const tidyAccountEmail = (email: string): string => email.trim();

/** The comparison key of an account email: surrounding whitespace ignored, case-insensitive. */
export const accountEmailKey = (email: string): string => tidyAccountEmail(email).toLowerCase();
