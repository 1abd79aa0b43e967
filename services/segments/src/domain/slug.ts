/**
 * The slug of `segment.<slug>.entry` / `.exit` (DESIGN.md): lower case, spaces to `-`, every other
 * non-word character removed ("VIP Users" -> `vip-users`). A name with no word character gets
 * `segment`. Fixed at creation, so a rename never changes the events' names.
 */
export function slugify(name: string): string {
  const slug = name
    .toLowerCase()
    .trim()
    .replace(/\s+/g, '-')
    .replace(/[^\w-]/g, '')
    .replace(/-+/g, '-')
    .replace(/^-|-$/g, '');
  return slug || 'segment';
}

/** Two segments of a project never share a slug: the second "VIP" is `vip-2`, then `vip-3`. */
export function freeSlug(base: string, taken: readonly string[]): string {
  const used = new Set(taken);
  if (!used.has(base)) return base;
  for (let n = 2; ; n++) if (!used.has(`${base}-${n}`)) return `${base}-${n}`;
}
