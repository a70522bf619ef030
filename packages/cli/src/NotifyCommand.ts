/**
 * `flotta notify`: the config's notification targets, and `flotta notify test [--target N]`, which sends each of
 * them (or the Nth) one test event now, from here, with no serve running: `Delivery.testEntry` in the target's
 * format, signed with its secret, under the delivery id `<target id>-test-<timestamp>`. It prints, per target, the
 * URL as status shows it (its origin: a webhook's path is a secret), the HTTP status and the time taken, or why it
 * failed; and exits with `NotificationFailed` (code 16) when any target did not take it.
 */
import { Command } from "@effect/cli"
import * as Delivery from "@flotta/webhooks/Delivery"
import { targetOf } from "@flotta/webhooks/WebhooksConfig"
import type { Target } from "@flotta/webhooks/WebhooksConfig"
import { Clock, Duration, Effect, Either, Option, Schema } from "effect"
import * as Composition from "./Composition.js"
import type * as ConfigFile from "./ConfigFile.js"
import * as Flags from "./Flags.js"
import * as Output from "./Output.js"
import * as Shared from "./SharedOptions.js"

/** The config has no `notify` section: there is nothing to send to. */
export class NotifyNotConfigured extends Schema.TaggedError<NotifyNotConfigured>()("NotifyNotConfigured", {
  file: Schema.NullOr(Schema.String)
}) {
  override get message() {
    return `${this.file ?? "no config file here"}: no notify section, so there is nothing to send to. Add one, ` +
      `e.g. "notify": [{ "url": "https://example.com/hooks/flotta", "events": ["run_finished"] }]`
  }
}

/** Some target did not take the test notification. */
export class NotificationFailed extends Schema.TaggedError<NotificationFailed>()("NotificationFailed", {
  failed: Schema.Array(Schema.String),
  total: Schema.Number
}) {
  override get message() {
    return `${this.failed.length} of ${this.total} notification ${this.total === 1 ? "target" : "targets"} did ` +
      `not take the test notification: ${this.failed.join(", ")}`
  }
}

/** How one target took the test. */
export interface TestResult {
  /** Its place in the config's `notify` list, from 1. */
  readonly target: number
  readonly id: string
  /** Its origin only. */
  readonly url: string
  readonly format: "json" | "slack"
  readonly signed: boolean
  readonly deliveryId: string
  readonly ok: boolean
  /** The HTTP status, when it answered. */
  readonly status: number | null
  readonly ms: number
  readonly reason?: string
}

/** The config's targets, as the notifier makes them (with the configured dashboard for links). */
export const targetsOf = Effect.fn("NotifyCommand.targetsOf")(function*(config: ConfigFile.LoadedConfig) {
  return yield* config.notify === undefined || config.notify.length === 0
    ? Effect.fail(new NotifyNotConfigured({ file: config.file }))
    : Effect.succeed(config.notify.map((target) =>
      targetOf(
        target,
        Composition.configuredDashboardUrl(config, {
          mcp: config.mcp !== undefined,
          dashboard: config.dashboard !== undefined
        })
      )
    ))
})

/** Which targets the test goes to: all, or the Nth (from 1). */
export const chosen = (
  targets: ReadonlyArray<Target>,
  target: Option.Option<number>
): Either.Either<ReadonlyArray<readonly [number, Target]>, Shared.UsageError> => {
  const all = targets.map((t, i) => [i + 1, t] as const)
  if (Option.isNone(target)) return Either.right(all)
  const picked = all[target.value - 1]
  return picked === undefined
    ? Either.left(Shared.badValue(
      "--target",
      String(target.value),
      `is not a target: the config's notify section has ${targets.length} (1 to ${targets.length})`
    ))
    : Either.right([picked])
}

/** Sends the test event to each target at once; the results in the config's order. */
export const sendTests = Effect.fn("NotifyCommand.sendTests")(
  function*(targets: ReadonlyArray<readonly [number, Target]>) {
    const now = yield* Clock.currentTimeMillis
    const entry = Delivery.testEntry(new Date(now))
    return yield* Effect.forEach(targets, ([n, target]) => {
      const deliveryId = `${target.id}-test-${now}`
      return Delivery.post(target, Delivery.bodyOf(target, entry), deliveryId).pipe(
        Effect.either,
        Effect.timed,
        Effect.map(([took, outcome]): TestResult => ({
          target: n,
          id: target.id,
          url: target.shown,
          format: target.format,
          signed: Option.isSome(target.secret),
          deliveryId,
          ok: Either.isRight(outcome),
          status: Either.match(outcome, { onLeft: (e) => e.status, onRight: (status) => status }),
          ms: Math.round(Duration.toMillis(took)),
          ...(Either.isLeft(outcome) ? { reason: outcome.left.reason } : {})
        }))
      )
    }, { concurrency: "unbounded" })
  }
)

/** One line per target: `ok    1 https://hooks.example.com/…  200 in 35 ms`. */
export const renderResults = (results: ReadonlyArray<TestResult>): string =>
  results.map((r) =>
    `${r.ok ? "ok  " : "FAIL"}  ${r.target} ${r.url}  ` +
    (r.ok ? `${r.status} in ${r.ms} ms` : `${r.reason ?? "failed"} (after ${r.ms} ms)`) +
    ` (${r.format}${r.signed ? ", signed" : ""}; delivery ${r.deliveryId})`
  ).join("\n")

/** The failure a run of tests ends with, when a target did not take it. */
export const failureOf = (results: ReadonlyArray<TestResult>): Option.Option<NotificationFailed> => {
  const failed = results.filter((r) => !r.ok)
  return failed.length === 0
    ? Option.none()
    : Option.some(new NotificationFailed({ failed: failed.map((r) => `${r.target} ${r.url}`), total: results.length }))
}

const targetFlag = Flags.positiveInteger("target").pipe(
  Flags.optional("Only the Nth target of the config's notify list (from 1); default: every target.")
)

const test = Command.make(
  "test",
  { config: Shared.config, json: Shared.json, target: targetFlag },
  (flags) =>
    Effect.gen(function*() {
      const config = yield* Shared.loadConfig(flags.config)
      const targets = yield* targetsOf(config)
      const picked = yield* chosen(targets, flags.target)
      if (!flags.json) {
        yield* Output.stderr(`flotta: sending a test notification to ${picked.length} of ${targets.length} target(s)`)
      }
      const results = yield* sendTests(picked)
      const failure = failureOf(results)
      yield* Output.stdout(
        flags.json ? JSON.stringify({ ok: Option.isNone(failure), results }, null, 2) : renderResults(results)
      )
      if (Option.isSome(failure)) return yield* failure.value
    })
).pipe(
  Command.withDescription(
    "Send one test notification to every target of the config's notify section (or the --target), signed, in " +
      "its format, from here (no serve needed); print each target's HTTP status and time, or why it failed."
  )
)

/** `flotta notify` alone: the targets, as the config has them. */
const notify = Command.make("notify", { config: Shared.config, json: Shared.json }, (flags) =>
  Effect.gen(function*() {
    const config = yield* Shared.loadConfig(flags.config)
    const targets = yield* targetsOf(config)
    const view = targets.map((t, i) => ({
      target: i + 1,
      id: t.id,
      url: t.shown,
      events: t.events,
      format: t.format,
      signed: Option.isSome(t.secret)
    }))
    yield* Output.stdout(
      flags.json
        ? JSON.stringify({ targets: view }, null, 2)
        : view.map((t) =>
          `${t.target} ${t.url}  ${t.format}${t.signed ? ", signed" : ""}  events: ${t.events.join(", ")}`
        ).join("\n")
    )
  })).pipe(
    Command.withDescription(
      "The config's notification targets (each URL as its origin only), and `notify test`, which sends each one " +
        "a test notification (alone: the targets)."
    ),
    Command.withSubcommands([test])
  )

export const commands = [notify] as const
