const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Ids are uuids; anything else can name no row, and must not reach a uuid column as a cast error. */
export const isUuid = (value: unknown): value is string => typeof value === 'string' && UUID.test(value);
