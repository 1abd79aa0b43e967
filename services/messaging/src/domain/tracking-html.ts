// Open and click tracking: links in the HTML become redirects through the platform and a
// 1x1 pixel is appended. The text/plain part keeps the original links (it is generated
// from the HTML before this rewrite).

import { webDestination } from './link-safety.js';

// A quoted value, or an unquoted one (`href=https://...`: to white space or `>`, as browsers read it).
const ANCHOR_HREF = /(<a\b[^>]*?\shref\s*=\s*)(?:(["'])(.*?)\2|([^\s>]+))/gis;

const NAMED: Record<string, string> = { amp: '&', quot: '"', apos: "'", lt: '<', gt: '>' };

/** The URL a browser follows: `&amp;` and numeric references (`&#38;`, `&#x2F;`) decoded. */
function decodeEntities(url: string): string {
  return url.replace(/&(?:#(\d{1,7})|#x([0-9a-f]{1,6})|(amp|quot|apos|lt|gt));/gi, (whole, dec, hex, name) => {
    if (name) return NAMED[name.toLowerCase()];
    const cp = dec ? Number(dec) : Number.parseInt(hex, 16);
    return cp > 0 && cp <= 0x10ffff && (cp < 0xd800 || cp > 0xdfff) ? String.fromCodePoint(cp) : whole;
  });
}

const escapeAttr = (s: string) => s.replace(/&/g, '&amp;').replace(/"/g, '&quot;');

export interface TrackingRewrite {
  /** Redirect URL for a link, or undefined to leave it alone. */
  clickUrl(url: string): string | undefined;
  pixelUrl: string;
}

/** Rewrites http(s) anchors (plain web addresses) and appends the open pixel (before </body> when there is one). */
export function addTracking(html: string, t: TrackingRewrite): string {
  const rewritten = html.replace(
    ANCHOR_HREF,
    (whole, prefix: string, quote: string | undefined, quoted: string | undefined, bare: string | undefined) => {
      const url = decodeEntities((quoted ?? bare ?? '').trim());
      if (!/^https?:\/\//i.test(url)) return whole; // mailto:, tel:, #anchors, Liquid leftovers
      // Credentials in the URL, or none a browser parses: the platform never redirects there (link-safety.ts).
      if (!webDestination(url)) return whole;
      const tracked = t.clickUrl(url);
      const q = quote ?? '"';
      return tracked ? `${prefix}${q}${escapeAttr(tracked)}${q}` : whole;
    },
  );
  const pixel =
    `<img src="${escapeAttr(t.pixelUrl)}" width="1" height="1" alt="" ` +
    'style="display:block;width:1px;height:1px;border:0" />';
  const bodyEnd = rewritten.search(/<\/body\s*>/i);
  return bodyEnd >= 0 ? `${rewritten.slice(0, bodyEnd)}${pixel}${rewritten.slice(bodyEnd)}` : `${rewritten}${pixel}`;
}
