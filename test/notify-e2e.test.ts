import { afterEach, describe, expect, it } from 'vitest'
import { join } from 'node:path'
import { Postbox } from '../src/postbox.js'
import { tempDir } from './helpers.js'
import { testDatabase, type TestDatabase } from './support/backend.js'

let pb: Postbox | null = null
let cleanup: (() => void) | null = null
let database: TestDatabase | null = null
afterEach(async () => {
  await pb?.close()
  pb = null
  await database?.drop()
  database = null
  cleanup?.()
})

/** The facade on the backend under test (a fresh PostgreSQL database in the `postgres` project). */
async function open(dir: string): Promise<Postbox> {
  database = await testDatabase()
  const url = database.databaseUrl
  return Postbox.open({ db: join(dir, 'postbox.db'), bootstrapAdminKey: false, ...(url !== undefined ? { databaseUrl: url } : {}) })
}

describe('notifications through the library facade and the real dispatcher', () => {
  it('delivers an inbox notification and a notification webhook event', async () => {
    const t = tempDir()
    cleanup = t.cleanup
    pb = await open(t.dir)
    await pb.users.put('u_1', { roles: ['staff'] })
    pb.start()
    const r = await pb.notifications.send({ topic: 'comment.created', recipients: ['role:staff'], title: 'New comment', channels: ['inbox', 'webhook'] })
    expect(r).toMatchObject({ recipients: 1, deliveries: 2 })
    for (let i = 0; i < 200 && await pb.inbox('u_1').unreadCount() === 0; i++) await new Promise((res) => setTimeout(res, 5))
    expect(await pb.inbox('u_1').list()).toMatchObject({ unread_count: 1, data: [{ title: 'New comment', topic: 'comment.created' }] })
    for (let i = 0; i < 200; i++) {
      const states = (await pb.notifications.get(r.id) as { deliveries: { status: string }[] }).deliveries.map((d) => d.status)
      if (states.every((s) => s === 'success')) break
      await new Promise((res) => setTimeout(res, 5))
    }
    expect((await pb.notifications.get(r.id) as { deliveries: { channel: string; status: string }[] }).deliveries.map((d) => [d.channel, d.status])).toEqual([
      ['inbox', 'success'],
      ['notify-webhook', 'success'],
    ])
  })

  it('publishes notification.<topic> for a topic of the full 200 characters', async () => {
    const t = tempDir()
    cleanup = t.cleanup
    pb = await open(t.dir)
    pb.start()
    const topic = 'a'.repeat(200)
    const r = await pb.notifications.send({ topic, recipients: ['u_1'], title: 'Long', channels: ['webhook'] })
    let states: string[] = []
    for (let i = 0; i < 200; i++) {
      states = (await pb.notifications.get(r.id) as { deliveries: { status: string }[] }).deliveries.map((d) => d.status)
      if (states.every((s) => s !== 'pending' && s !== 'in_flight')) break
      await new Promise((res) => setTimeout(res, 5))
    }
    expect(states).toEqual(['success'])
  })
})
