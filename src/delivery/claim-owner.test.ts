import { spawnSync } from 'node:child_process'
import { describe, expect, it } from 'vitest'
import { CLAIM_OWNER, isOrphanedClaim } from './claim-owner.js'

describe('claim owners', () => {
  const self = { pid: 4242, boot: 'aaaaaaaa' }
  const alive = (pid: number) => pid === 7
  it('names this process in every claim token prefix', () => {
    expect(CLAIM_OWNER).toMatch(new RegExp(`^${process.pid}\\.[0-9a-f]{8}\\.$`))
    expect(isOrphanedClaim(`${CLAIM_OWNER}0123456789abcdef01234567`)).toBe(false)
  })

  it('is an orphan only when its owner is gone: another PID not alive, or an earlier start with this PID', () => {
    expect(isOrphanedClaim('4242.aaaaaaaa.00ff', self, alive)).toBe(false)
    expect(isOrphanedClaim('4242.bbbbbbbb.00ff', self, alive)).toBe(true)
    expect(isOrphanedClaim('7.cccccccc.00ff', self, alive)).toBe(false)
    expect(isOrphanedClaim('8.cccccccc.00ff', self, alive)).toBe(true)
    // Written before owners were recorded: unknown, so it waits for its lease.
    expect(isOrphanedClaim('0123456789abcdef01234567', self, alive)).toBe(false)
  })

  it('checks real processes by default', () => {
    const gone = spawnSync(process.execPath, ['-e', '']).pid!
    expect(isOrphanedClaim(`${gone}.cccccccc.00ff`)).toBe(true)
    expect(isOrphanedClaim(`${process.ppid}.cccccccc.00ff`)).toBe(false)
  })
})
