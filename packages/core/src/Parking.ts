/**
 * Usage limits: park, do not fail. When a turn runs into a rate limit (`TurnOutcome.limitOf`), every agent that
 * uses the same credentials parks: no new turn is sent until the limit resets (plus a jitter), and queued turns
 * wait. The turn that hit the limit neither fails nor is sent again: the CLI keeps its prompt and merges it with
 * the next user message, so on unpark its agent sends a short `CONTINUATION` and that answer becomes the turn's
 * result (CLAUDE-CLI.md, "Usage limits"). A limit with no reset time (an API key's 429, or a throttle) parks for
 * the fleet's own backoff. Agents resume one by one, `parkStagger` apart; a person can unpark by hand.
 *
 * Agents are grouped by their credentials (`Credentials`). What is parked, and until when, is kept in the store,
 * so a host that restarts while parked waits for the same reset instead of trying the API again at once.
 *
 * The waiting happens here, not in the CLI: every child gets `CLAUDE_CODE_RETRY_WATCHDOG=0` (see
 * `ClaudeCli.childEnv`). An agent whose own env sets it to `1` leaves the waiting to its CLI and is never parked.
 */
import {
  Array as Arr,
  Chunk,
  Clock,
  DateTime,
  Duration,
  Effect,
  Option,
  Random,
  Runtime,
  Schedule,
  Schema
} from "effect"
import type { RateLimitInfo } from "./ClaudeProtocol.js"
import type { Credentials } from "./Credentials.js"
import { FleetConfig } from "./FleetConfig.js"
import type { FleetSettings } from "./FleetConfig.js"
import * as Alarms from "./internal/alarms.js"
import type { Member, Membership } from "./ParkingSeat.js"
import { ReportLog } from "./ReportLog.js"
import { Store } from "./Store.js"
import type { Limit } from "./TurnOutcome.js"

/**
 * What a parked turn's agent sends on unpark. The CLI merges it with the prompt it kept, so the model carries
 * on with that prompt; the simulator and the in-memory CLI recognise it and answer the kept prompt.
 */
export const CONTINUATION = "[flotta: the usage limit has reset. Carry on with the request above.]"

export { CREDENTIAL_VARIABLES, credentialsOf } from "./Credentials.js"
export type { Credentials } from "./Credentials.js"
export { unseated } from "./ParkingSeat.js"
export type { Member, Membership } from "./ParkingSeat.js"

/**
 * How long a group parks for a limit with no reset time: `parkBackoff` doubling per backoff in a row, at most
 * `parkBackoffMax`, plus up to `parkJitter` drawn from `Random` (so tests control it with `TestRandom`).
 */
export const backoff = (
  settings: Pick<FleetSettings, "parkBackoff" | "parkBackoffMax" | "parkJitter">
): Schedule.Schedule<Duration.Duration> =>
  Schedule.exponential(settings.parkBackoff).pipe(
    Schedule.union(Schedule.spaced(settings.parkBackoffMax)),
    Schedule.addDelayEffect(() => jitter(settings.parkJitter)),
    Schedule.delays
  )

/** Up to `max`, drawn from `Random`: spreads the fleet's agents apart when a limit resets. */
export const jitter = Effect.fnUntraced(function*(max: Duration.DurationInput) {
  return yield* Effect.map(Random.nextIntBetween(0, Duration.toMillis(max) + 1), Duration.millis)
})

/** A parked group of agents: one set of credentials. */
export interface ParkedGroup {
  /** The credentials' label (never the secret). */
  readonly credentials: string
  /** `usage_limit`: the account's usage limit; `rate_limited`: a 429 with no reset time, backed off. */
  readonly reason: "usage_limit" | "rate_limited"
  readonly rateLimitType: string | null
  /** What the CLI said. */
  readonly message: string
  readonly since: string
  /** When its agents start to resume (ISO): the reset, or the backoff's end, plus jitter. */
  readonly until: string
  /** Its agents still parked. */
  readonly agents: ReadonlyArray<string>
}

interface Seat {
  readonly member: Member
  parked: boolean
  /** Cancels its pending staggered resume. */
  cancelResume: () => void
}

interface Park {
  readonly reason: ParkedGroup["reason"]
  readonly rateLimitType: string | null
  readonly message: string
  readonly since: number
  readonly until: number
  /** The reset has come (or a person unparked): agents are resuming, one by one. */
  resuming: boolean
  cancel: () => void
}

interface Group {
  readonly key: string
  readonly label: string
  readonly seats: Set<Seat>
  park: Park | null
  /** Backoffs in a row (a 429 with no reset time doubles the next); a success starts over. */
  step: number
  /** The window last warned about (`allowed_warning`), until the limiter says `allowed` again. */
  warned: string | null
}

/** What the store keeps per parked group. */
const StoredPark = Schema.Struct({
  key: Schema.String,
  label: Schema.String,
  reason: Schema.Literal("usage_limit", "rate_limited"),
  rateLimitType: Schema.NullOr(Schema.String),
  message: Schema.String,
  since: Schema.Number,
  until: Schema.Number,
  step: Schema.Number
})
const decodeStored = Schema.decodeUnknownOption(Schema.Array(StoredPark))

export const STATE_KEY = "parking"

const noop = () => undefined

const iso = (millis: number) => DateTime.formatIso(DateTime.unsafeMake(millis))

export class Parking extends Effect.Service<Parking>()("@flotta/core/Parking", {
  scoped: Effect.gen(function*() {
    const settings = yield* FleetConfig
    const reports = yield* ReportLog
    const store = yield* Store
    const alarms = yield* Alarms.make
    const clock = yield* Effect.clock
    const groups = new Map<string, Group>()
    const staggerMs = Duration.toMillis(settings.parkStagger)
    // A member hits a limit synchronously, from its turn: the delays are drawn there, with this fleet's Random.
    const runSync = Runtime.runSync(yield* Effect.runtime<never>())
    const schedule = backoff(settings)
    /** The `step`th backoff in a row, jittered. */
    const backoffMs = (step: number) =>
      runSync(
        Schedule.run(schedule, 0, Arr.replicate(undefined, Math.max(1, step))).pipe(
          Effect.map((delays) => Duration.toMillis(Option.getOrElse(Chunk.last(delays), () => Duration.zero)))
        )
      )
    const jitterMs = () => Duration.toMillis(runSync(jitter(settings.parkJitter)))

    const groupOf = (credentials: Credentials) => {
      let group = groups.get(credentials.key)
      if (group === undefined) {
        group = { key: credentials.key, label: credentials.label, seats: new Set(), park: null, step: 0, warned: null }
        groups.set(credentials.key, group)
      }
      return group
    }

    const persist = () =>
      store.saveState(
        STATE_KEY,
        [...groups.values()].flatMap((g) =>
          g.park === null ? [] : [{
            key: g.key,
            label: g.label,
            reason: g.park.reason,
            rateLimitType: g.park.rateLimitType,
            message: g.park.message,
            since: g.park.since,
            until: g.park.until,
            step: g.step
          }]
        )
      )

    const parkedData = (group: Group, park: Park) => ({
      until: iso(park.until),
      reason: park.reason,
      ...(park.rateLimitType === null ? {} : { rateLimitType: park.rateLimitType }),
      credentials: group.label,
      message: park.message
    })

    /** The group is over its limit once no seat is parked. */
    const settle = (group: Group) => {
      if (group.park === null || [...group.seats].some((s) => s.parked)) return
      group.park.cancel()
      group.park = null
      persist()
    }

    const resumeSeat = (group: Group, seat: Seat, by: string, now: number) => {
      if (!seat.parked) return
      seat.parked = false
      seat.cancelResume()
      seat.cancelResume = noop
      reports.unsafePost(seat.member.name, "unparked", { by, credentials: group.label }, undefined, now)
      seat.member.resume(now)
      settle(group)
    }

    /** Resumes a group's parked agents: at once the first, then one per `parkStagger` (parked turns first). */
    const resumeAll = (group: Group, by: string, now: number): ReadonlyArray<string> => {
      const park = group.park
      if (park === null) return []
      park.resuming = true
      park.cancel()
      const order = [...group.seats].filter((s) => s.parked).sort((a, b) =>
        Number(b.member.hasParkedTurn()) - Number(a.member.hasParkedTurn()) ||
        a.member.name.localeCompare(b.member.name)
      )
      order.forEach((seat, i) => {
        seat.cancelResume()
        seat.cancelResume = i === 0 ? noop : alarms.set(
          now + i * staggerMs,
          Effect.sync(() => {
            seat.cancelResume = noop // it rings: nothing left to cancel
            resumeSeat(group, seat, by, clock.unsafeCurrentTimeMillis())
          })
        )
      })
      if (order.length === 0) settle(group)
      else resumeSeat(group, order[0]!, by, now)
      return order.map((s) => s.member.name)
    }

    const armPark = (group: Group, park: Omit<Park, "resuming" | "cancel">) => {
      group.park?.cancel()
      const next: Park = { ...park, resuming: false, cancel: noop }
      group.park = next
      next.cancel = alarms.set(
        park.until,
        Effect.sync(() => {
          next.cancel = noop // it rings: nothing left to cancel
          if (group.park === next) resumeAll(group, "reset", clock.unsafeCurrentTimeMillis())
        })
      )
      persist()
      return next
    }

    const hit = (group: Group, hitter: Seat, limit: Limit, turnId: string, now: number) => {
      const current = group.park !== null && !group.park.resuming ? group.park : null
      const resetKnown = limit._tag === "UsageLimit" && limit.resetsAt !== null && limit.resetsAt > now
      let until: number
      if (resetKnown) {
        until = limit.resetsAt! + jitterMs()
      } else {
        // Turns already in flight when the group parked may hit it too: that is the same limit, not one more.
        if (current === null) group.step++
        until = now + backoffMs(group.step)
      }
      let park = current
      const extends_ = park === null || until > park.until
      if (extends_) {
        park = armPark(group, {
          reason: limit._tag === "UsageLimit" ? "usage_limit" : "rate_limited",
          rateLimitType: limit._tag === "UsageLimit" ? limit.rateLimitType : null,
          message: limit.message,
          since: current?.since ?? now,
          until
        })
      }
      for (const seat of group.seats) {
        if (!seat.member.parks) continue
        const isHitter = seat === hitter
        const newly = !seat.parked
        seat.parked = true
        seat.cancelResume()
        seat.cancelResume = noop
        if (isHitter || newly || extends_) {
          reports.unsafePost(
            seat.member.name,
            "parked",
            parkedData(group, park!),
            isHitter ? turnId : undefined,
            now
          )
        }
      }
    }

    const observe = (group: Group, seat: Seat, info: RateLimitInfo, now: number) => {
      if (info.status === "allowed") {
        group.warned = null
        return
      }
      if (info.status !== "allowed_warning") return
      const window = info.rateLimitType ?? "unknown"
      if (group.warned === window) return
      group.warned = window
      reports.unsafePost(
        seat.member.name,
        "usage_warning",
        {
          credentials: group.label,
          rateLimitType: info.rateLimitType ?? null,
          resetsAt: info.resetsAt === undefined ? null : iso(info.resetsAt * 1000),
          ...(info.utilization === undefined ? {} : { utilization: info.utilization }),
          ...(info.surpassedThreshold === undefined ? {} : { surpassedThreshold: info.surpassedThreshold })
        },
        undefined,
        now
      )
    }

    /** An agent takes its seat; one that joins a parked group (not yet resuming) is parked at once. */
    const join = (member: Member): Membership => {
      const group = groupOf(member.credentials)
      const seat: Seat = { member, parked: false, cancelResume: noop }
      group.seats.add(seat)
      if (member.parks && group.park !== null && !group.park.resuming) {
        seat.parked = true
        const now = clock.unsafeCurrentTimeMillis()
        reports.unsafePost(member.name, "parked", parkedData(group, group.park), undefined, now)
      }
      return {
        parks: member.parks,
        parkedUntil: () => (seat.parked && group.park !== null ? group.park.until : null),
        // One whose CLI waited the limit out itself is not parked, but the limit is its group's: the others park.
        hit: (limit, turnId, now) => hit(group, seat, limit, turnId, now),
        observe: (info, now) => observe(group, seat, info, now),
        succeeded: () => {
          if (group.park === null) group.step = 0
        },
        // The limit outlives the agents that leave (a fleet that stops, say): a new one joins it parked.
        leave: () => {
          seat.cancelResume()
          seat.parked = false
          group.seats.delete(seat)
        }
      }
    }

    // What was parked when the last host stopped stays parked until its time.
    const stored = Option.flatMap(yield* store.loadState(STATE_KEY), decodeStored)
    if (Option.isSome(stored)) {
      const now = clock.unsafeCurrentTimeMillis()
      for (const row of stored.value) {
        if (row.until <= now) continue
        const group = groupOf({ key: row.key, label: row.label })
        group.step = row.step
        armPark(group, {
          reason: row.reason,
          rateLimitType: row.rateLimitType,
          message: row.message,
          since: row.since,
          until: row.until
        })
      }
    }
    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        for (const group of groups.values()) group.park?.cancel()
      })
    )

    /** Unparks by hand: one agent (the rest of its group stays parked), or every parked group (staggered). */
    const unpark = Effect.fn("Parking.unpark")(function*(options: { readonly agent?: string } = {}) {
      const now = yield* Clock.currentTimeMillis
      if (options.agent === undefined) {
        return { unparked: [...groups.values()].flatMap((group) => resumeAll(group, "manual", now)) }
      }
      for (const group of groups.values()) {
        for (const seat of group.seats) {
          if (seat.member.name !== options.agent || !seat.parked) continue
          resumeSeat(group, seat, "manual", now)
          return { unparked: [options.agent] }
        }
      }
      return { unparked: [] }
    })

    /** The groups parked now, with their parked agents. */
    const parked = Effect.sync((): ReadonlyArray<ParkedGroup> =>
      [...groups.values()].flatMap((group) => {
        const park = group.park
        if (park === null) return []
        return [{
          credentials: group.label,
          reason: park.reason,
          rateLimitType: park.rateLimitType,
          message: park.message,
          since: iso(park.since),
          until: iso(park.until),
          agents: [...group.seats].filter((s) => s.parked).map((s) => s.member.name).sort()
        }]
      })
    )

    return { join, unpark, parked } as const
  })
}) {}
