import { projectCreated, projectDeleted, userCreated } from './bus-messages.js';

describe('identity bus messages (README "Messages on the bus")', () => {
  const id = '11111111-1111-4111-8111-111111111111';

  test('identity.user.created: {userId, email}', () => {
    expect(userCreated({ id, email: 'a@b.co' })).toEqual({
      subject: 'identity.user.created',
      payload: { userId: id, email: 'a@b.co' },
    });
  });

  test('identity.project.created: {projectId, name}; identity.project.deleted: {projectId}', () => {
    expect(projectCreated({ id, name: 'Shop' })).toEqual({
      subject: 'identity.project.created',
      payload: { projectId: id, name: 'Shop' },
    });
    expect(projectDeleted(id)).toEqual({ subject: 'identity.project.deleted', payload: { projectId: id } });
  });
});
