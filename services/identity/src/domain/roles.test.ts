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
  test('admins manage members but cannot demote other admins', () => {
    expect(canChangeMember('admin', 'member', 'admin')).toBe(true);
    expect(canChangeMember('admin', 'admin', 'member')).toBe(false);
    expect(canChangeMember('member', 'member')).toBe(false);
  });
});
