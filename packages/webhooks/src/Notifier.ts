/**
 * Notifications out: each target follows the report log with a cursor kept in the store, and POSTs the entries it
 * wants one at a time, in order. The report log is the outbox: an entry is sent until the receiver takes it (a
 * 2xx), then the cursor moves past it, so a receiver that is down, or a host that restarts, loses nothing: the
 * target resumes from its cursor. Retries follow an Effect `Schedule` (1 s, doubling, then every 5 minutes,
 * jittered); an event still undelivered a day after it happened, or refused outright (a 4xx), becomes a dead
 * letter, and the target goes on. Trouble is news in the log itself: `notify_failing` once when a target starts
 * failing, `notify_recovered` when it takes one again, `notify_dead` for each dead letter (never sent anywhere).
 */
import * as EngineEvents from "@flotta/core/EngineEvents"
import { ReportLog } from "@flotta/core/ReportLog"
import type { ReportEntry } from "@flotta/core/ReportLog"
import { Store } from "@flotta/core/Store"
import type { StoreShape } from "@flotta/core/Store"
import { Clock, Context, Duration, Effect, Option, Queue, Ref, Schedule, Schema, Stream } from "effect"
import * as Delivery from "./Delivery.js"
import type { NotifyEvent, Target } from "./WebhooksConfig.js"
import * as Events from "./WebhooksEvents.js"
import { DeadLetter } from "./WebhooksEvents.js"

export { DeadLetter } from "./WebhooksEvents.js"

/** What the store keeps of a target, after each step. */
export const TargetState = Schema.Struct({
  /** The last entry handled (delivered or dead): the next one sent comes after it. */
  cursor: Schema.Number,
  delivered: Schema.Number,
  lastDelivered: Schema.NullOr(Schema.Struct({ seq: Schema.Number, at: Schema.String })),
  failing: Schema.NullOr(Schema.Struct({
    since: Schema.String,
    attempts: Schema.Number,
    reason: Schema.String,
    /** The entry it is stuck on. */
    seq: Schema.Number
  })),
  deadCount: Schema.Number,
  /** The newest dead letters, oldest first. */
  dead: Schema.Array(DeadLetter)
})
export type TargetState = typeof TargetState.Type

/** A target's delivery state, as doctor, the dashboard and the report log show it. */
export interface TargetStatus extends TargetState {
  readonly id: string
  /** The URL's origin only. */
  readonly url: string
  readonly events: ReadonlyArray<NotifyEvent>
  readonly format: "json" | "slack"
}

/** Dead letters kept per target. */
const KEPT_DEAD = 50

export const stateKey = (target: Pick<Target, "id">) => `notify/${target.id}`

const decodeState = Schema.decodeUnknownOption(TargetState)

const statusOf = (target: Target, state: TargetState): TargetStatus => ({
  id: target.id,
  url: target.shown,
  events: target.events,
  format: target.format,
  ...state
})

/** The targets' state as the store has it (doctor reads a store with no fleet running). */
export const storedStatus = Effect.fn("Notifier.storedStatus")(
  function*(store: Pick<StoreShape, "loadState">, targets: ReadonlyArray<Target>) {
    return yield* Effect.forEach(targets, (target) =>
      Effect.map(
        store.loadState(stateKey(target)),
        (stored) => Option.map(Option.flatMap(stored, decodeState), (state) => statusOf(target, state))
      ))
  }
)

/** Whether a target takes an entry. */
export const wants = (target: Target, entry: Pick<ReportEntry, "kind">) =>
  Option.match(target.kinds, {
    onNone: () =>
      !(Events.OWN_KINDS as ReadonlyArray<string>).includes(entry.kind) && entry.kind !== EngineEvents.textDelta.kind,
    onSome: (kinds) => kinds.includes(entry.kind)
  })

/** A target's kinds as a report query or subscription takes them (none: every kind). */
const kindsOf = (target: Target) => Option.match(target.kinds, { onNone: () => ({}), onSome: (kinds) => ({ kinds }) })

export interface NotifierOptions {
  /** An event still undelivered this long after it happened is a dead letter (default a day). */
  readonly deadAfter?: Duration.DurationInput
  /** Between tries of one delivery (default: 1 s doubling up to every 5 minutes, jittered). */
  readonly retry?: Schedule.Schedule<unknown, Delivery.DeliveryFailed>
}

export const DEFAULT_RETRY: Schedule.Schedule<unknown, Delivery.DeliveryFailed> = Schedule.exponential("1 second")
  .pipe(Schedule.union(Schedule.spaced("5 minutes")), Schedule.jittered)

const iso = (millis: number) => new Date(millis).toISOString()

/** The running notifications: one fiber per target for the life of the scope. */
export const make = Effect.fn("Notifier.make")(
  function*(targets: ReadonlyArray<Target>, options: NotifierOptions = {}) {
    const log = yield* ReportLog
    const store = yield* Store
    const deadAfter = Duration.toMillis(options.deadAfter ?? "1 day")
    const retry = options.retry ?? DEFAULT_RETRY
    // Where the log stands now: a target new to this store starts here, not at the start of history.
    const newest = (yield* log.reports({ last: 1 })).next

    const followers = yield* Effect.forEach(targets, (target) =>
      Effect.gen(function*() {
        const stored = Option.flatMap(yield* store.loadState(stateKey(target)), decodeState)
        const state = yield* Ref.make<TargetState>(Option.getOrElse(stored, () => ({
          cursor: newest,
          delivered: 0,
          lastDelivered: null,
          failing: null,
          deadCount: 0,
          dead: []
        })))
        const wake = yield* Queue.sliding<void>(1)
        return { target, state, wake }
      }))

    const save = (target: Target, state: Ref.Ref<TargetState>) =>
      Effect.flatMap(Ref.get(state), (value) =>
        Effect.sync(() => store.saveState(stateKey(target), value)).pipe(
          Effect.catchAllDefect((defect) => Effect.logWarning(`notify: ${target.shown}: state not saved`, defect))
        ))

    const step = (target: Target, state: Ref.Ref<TargetState>, change: (s: TargetState) => TargetState) =>
      Effect.zipRight(Ref.update(state, change), save(target, state))

    /** Sends one entry until it is taken or given up; the cursor then moves past it. */
    const deliver = (target: Target, state: Ref.Ref<TargetState>, entry: ReportEntry) =>
      Effect.gen(function*() {
        const id = Delivery.deliveryId(target, entry)
        const body = Delivery.bodyOf(target, entry)
        const happened = Date.parse(entry.at)
        const failed = (error: Delivery.DeliveryFailed) =>
          Effect.gen(function*() {
            const now = yield* Clock.currentTimeMillis
            const before = (yield* Ref.get(state)).failing
            yield* step(target, state, (s) => ({
              ...s,
              failing: s.failing === null
                ? { since: iso(now), attempts: 1, reason: error.reason, seq: entry.seq }
                : { ...s.failing, attempts: s.failing.attempts + 1, reason: error.reason, seq: entry.seq }
            }))
            if (before === null) {
              yield* log.post("notify", Events.notifyFailing, {
                target: target.shown,
                reason: error.reason,
                seq: entry.seq
              })
            }
          })
        const expired = Effect.map(Clock.currentTimeMillis, (now) => now - happened >= deadAfter)
        const outcome = yield* Delivery.post(target, body, id).pipe(
          Effect.tapError(failed),
          Effect.retry({
            schedule: retry,
            while: (error) => Effect.map(expired, (old) => error.retryable && !old)
          }),
          Effect.either
        )
        const now = yield* Clock.currentTimeMillis
        if (outcome._tag === "Right") {
          const recovered = (yield* Ref.get(state)).failing
          yield* step(target, state, (s) => ({
            ...s,
            cursor: entry.seq,
            delivered: s.delivered + 1,
            lastDelivered: { seq: entry.seq, at: iso(now) },
            failing: null
          }))
          if (recovered !== null) {
            yield* log.post("notify", Events.notifyRecovered, {
              target: target.shown,
              since: recovered.since,
              attempts: recovered.attempts
            })
          }
          return
        }
        const letter: DeadLetter = {
          seq: entry.seq,
          kind: entry.kind,
          agent: entry.agent,
          at: entry.at,
          deadAt: iso(now),
          deliveryId: id,
          reason: outcome.left.reason
        }
        yield* step(target, state, (s) => ({
          ...s,
          cursor: entry.seq,
          deadCount: s.deadCount + 1,
          dead: [...s.dead, letter].slice(-KEPT_DEAD),
          // Refused outright, the receiver is up: what follows may well go through.
          failing: outcome.left.retryable ? s.failing : null
        }))
        yield* log.post("notify", Events.notifyDead, { target: target.shown, ...letter })
      })

    /** A target's loop: the next entries after its cursor, each delivered in order; asleep when there are none. */
    const follow = (target: Target, state: Ref.Ref<TargetState>, wake: Queue.Queue<void>) =>
      Effect.gen(function*() {
        const { cursor } = yield* Ref.get(state)
        const page = yield* log.reports({ since: cursor, ...kindsOf(target), limit: 100 })
        const wanted = page.entries.filter((entry) => wants(target, entry))
        for (const entry of wanted) yield* deliver(target, state, entry)
        if (page.entries.length === 0) {
          yield* Queue.take(wake)
          return
        }
        // Entries this target does not take (its own kinds, for `*`) are passed over.
        const last = page.entries[page.entries.length - 1]!.seq
        if ((yield* Ref.get(state)).cursor < last) yield* step(target, state, (s) => ({ ...s, cursor: last }))
      }).pipe(Effect.forever)

    for (const { state, target, wake } of followers) {
      // Woken only by the kinds it takes (a turn's entries wake no `approval_requested` target); what it
      // missed, it reads from the log itself.
      yield* log.stream({ keptOnly: true, ...kindsOf(target) }).pipe(
        Stream.runForEach(() => Queue.offer(wake, undefined)),
        Effect.forkScoped
      )
      yield* follow(target, state, wake).pipe(
        Effect.withSpan("notify.follow", { attributes: { "flotta.notify.target": target.shown } }),
        Effect.forkScoped
      )
    }

    return {
      targets: followers.map(({ target }) => target),
      status: Effect.forEach(followers, ({ state, target }) => Effect.map(Ref.get(state), (s) => statusOf(target, s)))
    }
  }
)

/** The notifications a fleet sends: its targets and each one's delivery state. */
export class Notifier extends Context.Tag("@flotta/webhooks/Notifier")<Notifier, {
  readonly targets: ReadonlyArray<Target>
  readonly status: Effect.Effect<ReadonlyArray<TargetStatus>>
}>() {}
