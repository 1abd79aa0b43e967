// The console speaks the public REST API: the session cookie signs it in, `X-Project-Id` picks the project
// of the API routes (the same routes integrations call with a secret key).

export interface FieldError {
  field: string;
  message: string;
  code?: string;
}

/** An error answer of the API, in SPEC.md's envelope (or the flat `{error}` some dashboard routes use). */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly errors: FieldError[] = [],
    readonly suggestion?: string,
  ) {
    super(message);
  }

  /** The message of one field, for showing it next to that field. */
  field(name: string): string | undefined {
    return this.errors.find((e) => e.field === name || e.field.startsWith(`${name}.`))?.message;
  }
}

let currentProject: string | null = localStorage.getItem('project');

export function setProject(id: string | null): void {
  currentProject = id;
  if (id) localStorage.setItem('project', id);
  else localStorage.removeItem('project');
}

export const project = () => currentProject;

/** Full keys just issued (creation, rotation) stay in the tab's sessionStorage until logging out. */
export function forgetIssuedKeys(): void {
  for (const k of Object.keys(sessionStorage)) if (k.startsWith('keys:')) sessionStorage.removeItem(k);
}

type Body = unknown;

export async function api<T = any>(method: string, path: string, body?: Body): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (currentProject) headers['x-project-id'] = currentProject;
  let payload: BodyInit | undefined;
  if (body instanceof FormData) payload = body;
  else if (body !== undefined) {
    headers['content-type'] = 'application/json';
    payload = JSON.stringify(body);
  }
  const res = await fetch(path, { method, headers, body: payload, credentials: 'same-origin' });
  if (res.status === 204) return undefined as T;
  const text = await res.text();
  let json: any = null;
  try {
    json = text ? JSON.parse(text) : null;
  } catch {
    // not JSON: reported below
  }
  if (!res.ok) {
    const e = json?.error;
    if (typeof e === 'string') throw new ApiError(res.status, 'BAD_REQUEST', e);
    throw new ApiError(
      res.status,
      e?.code ?? `HTTP_${res.status}`,
      e?.message ?? (text.slice(0, 200) || res.statusText),
      e?.errors ?? [],
      e?.suggestion,
    );
  }
  return json as T;
}

export const get = <T = any>(path: string) => api<T>('GET', path);
export const post = <T = any>(path: string, body?: Body) => api<T>('POST', path, body ?? {});

export function query(params: Record<string, string | number | boolean | undefined | null>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
  const s = q.toString();
  return s ? `?${s}` : '';
}
