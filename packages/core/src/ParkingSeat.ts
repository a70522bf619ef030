/**
 * An agent's seat in its credentials' parking group: what an agent gives the fleet's `Parking` when it joins
 * (`Member`), what it gets back (`Membership`), and the seat of an agent that has not joined (`unseated`).
 */
import type { RateLimitInfo } from "./ClaudeProtocol.js"
import type { Credentials } from "./Credentials.js"
import type { Limit } from "./TurnOutcome.js"

/** What an agent gives the fleet's parking when it joins. */
export interface Member {
  readonly name: string
  readonly credentials: Credentials
  /** False for an agent whose CLI waits at limits itself (`CLAUDE_CODE_RETRY_WATCHDOG=1`): never parked. */
  readonly parks: boolean
  /** Whether its turn in flight is parked (it resumes first, with the continuation). */
  readonly hasParkedTurn: () => boolean
  /** Unparked: send the continuation, or take the next queued turn. Synchronous; must not throw. */
  readonly resume: (now: number) => void
}

/** An agent's seat in its credentials' group. */
export interface Membership {
  readonly parks: boolean
  /** When this agent may send again (Clock millis), or null when it is not parked. */
  readonly parkedUntil: () => number | null
  /** Its turn `turnId` ran into `limit` at `now`: the whole group parks (but never an agent that `parks` not). */
  readonly hit: (limit: Limit, turnId: string, now: number) => void
  /** The limiter's view (a `rate_limit_event`): `allowed_warning` is reported once, as `usage_warning`. */
  readonly observe: (info: RateLimitInfo, now: number) => void
  /** A turn succeeded: the backoff starts over. */
  readonly succeeded: () => void
  readonly leave: () => void
}

const noop = () => undefined

/** The seat of an agent that has not joined (yet): never parked. */
export const unseated: Membership = {
  parks: false,
  parkedUntil: () => null,
  hit: noop,
  observe: noop,
  succeeded: noop,
  leave: noop
}
