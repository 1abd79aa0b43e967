import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { accountEmailKey, tidyAccountEmail } from '@svc/lib/account-email';
import { isValidEmail } from '@svc/lib/email-syntax';
import { withTransaction } from '@svc/lib/db';
import { conflict, forbidden, notFound, unauthorized } from '@svc/lib/errors';
import { isUuid } from '@svc/lib/ids';
import { enqueueMessage } from '@svc/lib/outbox';
import { parseOrThrow } from '@svc/lib/zod-errors';
import type { IdentityStore, KeyHashes, MemberRow, ProjectRow, UserRow } from '../store/identity-store.js';
import { projectCreated, projectKeysRotated, userCreated } from './bus-messages.js';
import { generateKey, generateSessionToken, hashKey, kindOfKey, type KeyKind } from './api-keys.js';
import { hashPassword, verifyPassword } from './passwords.js';
import { canChangeMember, canManageProject, type Role } from './roles.js';

const SESSION_TTL_SECONDS = 30 * 24 * 3600;

/**
 * An account email as stored: tidied the one way the login throttle also keys it (lib/account-email), in the
 * one address syntax every service accepts (lib/email-syntax), so account mail can be sent to it.
 */
export const accountEmailSchema = z
  .string()
  .transform(tidyAccountEmail)
  .pipe(z.string().refine(isValidEmail, { message: 'Invalid email', params: { code: 'invalid_string' } }));

const passwordSchema = z.string().min(8, 'Password must be at least 8 characters').max(200);
const credentialsSchema = z.object({ email: accountEmailSchema, password: passwordSchema });
// Sign-in only looks the address up: an account opened under an earlier, looser address syntax still signs in.
const loginSchema = z.object({ email: z.string().max(254), password: passwordSchema });
// Control characters, line separators and bidi overrides: a project's name is shown to the people invited to it,
// where they could fake lines or reorder text.
const CONTROL_CHARACTERS = /[\p{Cc}\u2028\u2029\u202A-\u202E\u2066-\u2069]/u;
const projectNameSchema = z
  .string()
  .trim()
  .min(1)
  .max(100)
  .refine((s) => !CONTROL_CHARACTERS.test(s), {
    message: 'Name must not contain line breaks, control characters or bidirectional overrides',
    params: { code: 'invalid_string' },
  });

export interface IssuedKeys {
  publicKey: string;
  secretKey: string;
}

export interface ProjectView extends ProjectRow {
  keys?: IssuedKeys;
}

function newKeys(): { issued: IssuedKeys; hashes: KeyHashes } {
  const pk = generateKey('public');
  const sk = generateKey('secret');
  return {
    issued: { publicKey: pk.key, secretKey: sk.key },
    hashes: { publicHash: pk.hash, publicPrefix: pk.prefix, secretHash: sk.hash, secretPrefix: sk.prefix },
  };
}

const projectNotFound = (id: string) => notFound('Project', id);

/** What an OAuth sign-in ended of an account whose address was not verified (Identity.signInVerifiedEmail). */
export interface AccountSecured {
  /** Its projects, whose keys were rotated, each with the addresses of its other members. */
  projects: { id: string; name: string; otherMembers: string[] }[];
  /** Pending invitations revoked. */
  invitations: number;
}

export interface IdentityOptions {
  signupDisabled: boolean;
}

/** Users, sessions, projects, keys and members: the rules, over the identity store. */
export class Identity {
  constructor(
    private readonly store: IdentityStore,
    private readonly opts: IdentityOptions,
  ) {}

  async signUp(input: { email: string; password: string }): Promise<{ user: UserRow; sessionToken: string }> {
    if (this.opts.signupDisabled) throw forbidden('Sign-up is disabled on this deployment', 'SIGNUP_DISABLED');
    const { email, password } = parseOrThrow(credentialsSchema, input);
    const passwordHash = await hashPassword(password);
    const token = generateSessionToken();
    return withTransaction(this.store.pool, async (tx) => {
      const user = await this.store.insertUser(tx, { id: randomUUID(), email, passwordHash });
      if (!user) throw conflict('A user with this email already exists', { field: 'email' });
      await this.store.insertSession(tx, token.hash, user.id, SESSION_TTL_SECONDS);
      await enqueueMessage(tx, userCreated(user));
      return { user, sessionToken: token.key };
    });
  }

  async login(input: { email: string; password: string }): Promise<{ user: UserRow; sessionToken: string }> {
    const invalid = unauthorized('INVALID_CREDENTIALS', 'Invalid email or password');
    const parsed = loginSchema.safeParse(input);
    if (!parsed.success) throw invalid;
    const user = await this.store.userByEmail(accountEmailKey(parsed.data.email));
    // Checked even without a user: an unknown address answers as slowly as a wrong password (no enumeration).
    const matches = await verifyPassword(parsed.data.password, user?.password_hash);
    if (!user || !matches) throw invalid;
    const token = generateSessionToken();
    await this.store.insertSession(this.store.pool, token.hash, user.id, SESSION_TTL_SECONDS);
    return { user, sessionToken: token.key };
  }

  /**
   * Sign-in with an address an OAuth provider says is verified: the account of that address (linked, and
   * its address marked verified) or a new one without a password (a password reset sets one). An account
   * whose address was not verified may have been opened by someone else with this address (nothing checked
   * it): everything that person could still use ends, so only the address's owner keeps the account. Its
   * password and sessions end, its open account links are spent, the pending invitations it sent or that invite
   * into its projects are revoked, and the keys of its projects rotate (it created each one, so it saw their
   * keys): nobody holds the new keys, the owner issues fresh ones. `secured` says what ended, for the notice mail.
   */
  async signInVerifiedEmail(
    email: string,
  ): Promise<{ user: UserRow; sessionToken: string; created: boolean; secured?: AccountSecured }> {
    const address = parseOrThrow(z.object({ email: accountEmailSchema }), { email }).email;
    const token = generateSessionToken();
    const out = await withTransaction(this.store.pool, async (tx) => {
      const linked = await this.store.verifiedUserByEmail(tx, accountEmailKey(address));
      let secured: { projects: ProjectRow[]; invitations: number } | undefined;
      if (linked?.newly_verified) {
        await this.store.deleteSessionsOf(tx, linked.id);
        secured = await this.store.endUnverifiedTenure(tx, linked.id);
        for (const project of secured.projects) {
          await this.store.replaceKeys(tx, project.id, newKeys().hashes);
          await enqueueMessage(tx, projectKeysRotated(project.id));
        }
      }
      let user: UserRow | null = linked;
      let created = false;
      if (!user) {
        if (this.opts.signupDisabled) throw forbidden('Sign-up is disabled on this deployment', 'SIGNUP_DISABLED');
        // No password: '' never verifies (passwords.ts), so only OAuth or a password reset opens the account.
        user = await this.store.insertUser(tx, {
          id: randomUUID(),
          email: address,
          passwordHash: '',
          emailVerified: true,
        });
        if (!user) throw conflict('A user with this email was created concurrently; sign in again');
        await enqueueMessage(tx, userCreated(user));
        created = true;
      }
      await this.store.insertSession(tx, token.hash, user.id, SESSION_TTL_SECONDS);
      return { user, sessionToken: token.key, created, secured };
    });
    if (!out.secured) return { user: out.user, sessionToken: out.sessionToken, created: out.created };
    const projects = await Promise.all(
      out.secured.projects.map(async (p) => ({
        id: p.id,
        name: p.name,
        otherMembers: (await this.store.members(p.id)).filter((m) => m.user_id !== out.user.id).map((m) => m.email),
      })),
    );
    return { ...out, secured: { projects, invitations: out.secured.invitations } };
  }

  async logout(sessionToken: string): Promise<void> {
    if (sessionToken) await this.store.deleteSession(hashKey(sessionToken));
  }

  async session(sessionToken: string): Promise<UserRow> {
    const user = sessionToken ? await this.store.userBySession(hashKey(sessionToken)) : null;
    if (!user) throw unauthorized('UNAUTHORIZED', 'Not signed in or the session has expired');
    return user;
  }

  async user(userId: string): Promise<UserRow> {
    const user = isUuid(userId) ? await this.store.userById(userId) : null;
    if (!user) throw notFound('User', userId);
    return user;
  }

  listProjects(userId: string): Promise<ProjectRow[]> {
    return this.store.projectsOfUser(userId);
  }

  /**
   * With `sessionToken` (the session the request came with), the session is checked again in the transaction that
   * creates the project: an OAuth takeover that ended it meanwhile makes this a 401, one that follows rotates the new
   * project's keys too (signInVerifiedEmail). Whoever squatted the address gets no keys to a project of the owner's.
   */
  async createProject(userId: string, name: string, sessionToken?: string): Promise<ProjectView> {
    const projectName = parseOrThrow(z.object({ name: projectNameSchema }), { name }).name;
    const { issued, hashes } = newKeys();
    return withTransaction(this.store.pool, async (tx) => {
      if (sessionToken && !(await this.store.holdSession(tx, userId, hashKey(sessionToken))))
        throw unauthorized('UNAUTHORIZED', 'Not signed in or the session has expired');
      const project = await this.store.insertProject(tx, {
        id: randomUUID(),
        name: projectName,
        ownerId: userId,
        keys: hashes,
      });
      await enqueueMessage(tx, projectCreated(project));
      return { ...project, keys: issued };
    });
  }

  async project(userId: string, projectId: string): Promise<ProjectRow> {
    const project = isUuid(projectId) ? await this.store.projectForUser(projectId, userId) : null;
    if (!project) throw projectNotFound(projectId);
    return project;
  }

  async updateProject(userId: string, projectId: string, patch: { name?: string }): Promise<ProjectRow> {
    const project = await this.project(userId, projectId);
    if (!canManageProject(project.role!))
      throw forbidden('Only owners and admins can change project settings', 'PROJECT_ACCESS_DENIED');
    if (patch.name !== undefined) {
      const name = parseOrThrow(z.object({ name: projectNameSchema }), patch).name;
      await this.store.renameProject(projectId, name);
    }
    return this.project(userId, projectId);
  }

  /**
   * Both keys rotate together; the old ones stop working at once: every gateway replica drops the project's
   * cached keys when it hears identity.project.keys_rotated (the one that answered drops them before answering).
   */
  async regenerateKeys(userId: string, projectId: string): Promise<ProjectView> {
    const project = await this.project(userId, projectId);
    if (!canManageProject(project.role!))
      throw forbidden('Only owners and admins can rotate keys', 'PROJECT_ACCESS_DENIED');
    const { issued, hashes } = newKeys();
    await withTransaction(this.store.pool, async (tx) => {
      await this.store.replaceKeys(tx, projectId, hashes);
      await enqueueMessage(tx, projectKeysRotated(projectId));
    });
    return { ...(await this.project(userId, projectId)), keys: issued };
  }

  async verifyKey(key: string): Promise<{ projectId: string; kind: KeyKind; disabled: boolean }> {
    const invalid = unauthorized('INVALID_API_KEY', 'Invalid API key');
    if (!kindOfKey(key)) throw invalid;
    const found = await this.store.projectByKeyHash(hashKey(key));
    if (!found) throw invalid;
    return { projectId: found.id, kind: found.kind, disabled: found.disabled };
  }

  async members(userId: string, projectId: string): Promise<MemberRow[]> {
    await this.project(userId, projectId);
    return this.store.members(projectId);
  }

  async updateMember(userId: string, projectId: string, memberId: string, role: Role): Promise<MemberRow> {
    const project = await this.project(userId, projectId);
    const target = isUuid(memberId) ? await this.store.member(projectId, memberId) : null;
    if (!target) throw notFound('Member', memberId);
    if (!canChangeMember(project.role!, target.role, role))
      throw forbidden('Not allowed to change this member', 'PROJECT_ACCESS_DENIED');
    await this.store.updateMemberRole(projectId, memberId, role);
    return (await this.store.member(projectId, memberId))!;
  }

  async removeMember(userId: string, projectId: string, memberId: string): Promise<void> {
    const project = await this.project(userId, projectId);
    const target = isUuid(memberId) ? await this.store.member(projectId, memberId) : null;
    if (!target) throw notFound('Member', memberId);
    // Leaving a project yourself is always allowed, except for the owner.
    const self = memberId === userId && target.role !== 'owner';
    if (!self && !canChangeMember(project.role!, target.role))
      throw forbidden('Not allowed to remove this member', 'PROJECT_ACCESS_DENIED');
    await this.store.deleteMember(projectId, memberId);
  }
}

export function isRole(value: string): value is Role {
  return value === 'owner' || value === 'admin' || value === 'member';
}
