import { canChangeMember, canDeleteProject, canManageProject } from './roles.js';

describe('member roles', () => {
  test('only the owner deletes a project', () => {
    expect(canDeleteProject('owner')).toBe(true);
    expect(canDeleteProject('admin')).toBe(false);
  });
  test('members cannot manage the project', () => {
    expect(canManageProject('member')).toBe(false);
    expect(canManageProject('admin')).toBe(true);
  });
  test('the owner can never be changed or removed, nor a second owner made', () => {
    expect(canChangeMember('owner', 'owner')).toBe(false);
    expect(canChangeMember('owner', 'member', 'owner')).toBe(false);
  });
  test('admins manage members only: no inviting or promoting admins, no demoting or removing one', () => {
    expect(canChangeMember('admin', 'member', 'member')).toBe(true);
    expect(canChangeMember('admin', 'member')).toBe(true);
    expect(canChangeMember('admin', 'member', 'admin')).toBe(false);
    expect(canChangeMember('admin', 'admin', 'member')).toBe(false);
    expect(canChangeMember('admin', 'admin')).toBe(false);
    expect(canChangeMember('member', 'member')).toBe(false);
  });
  test('the owner manages admins and members', () => {
    expect(canChangeMember('owner', 'member', 'admin')).toBe(true);
    expect(canChangeMember('owner', 'admin', 'member')).toBe(true);
    expect(canChangeMember('owner', 'admin')).toBe(true);
  });
});
