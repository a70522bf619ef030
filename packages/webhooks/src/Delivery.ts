/**
 * One POST of one event to one target: the body in the target's format (the report entry as JSON, or a Slack
 * incoming-webhook message linking to the dashboard), signed with the target's secret, with a delivery id the
 * receiver can drop a repeat by. A receiver that answers 2xx has it; 408, 429, a 5xx or no answer is worth
 * another try; any other answer is final.
 */
import * as EngineEvents from "@flotta/core/EngineEvents"
import * as ReportEvent from "@flotta/core/ReportEvent"
import type { ReportEntry } from "@flotta/core/ReportLog"
import { Data, Effect, Option, Redacted } from "effect"
import { createHmac } from "node:crypto"
import type { Target } from "./WebhooksConfig.js"
import { notifyTest } from "./WebhooksEvents.js"

/** How long a receiver has to answer one delivery. */
export const TIMEOUT_MS = 10_000

/** `sha256=<hex>`: the HMAC-SHA256 of the body under the secret, as `X-Flotta-Signature` (and GitHub) carry it. */
export const signature = (secret: string, body: string) =>
  `sha256=${createHmac("sha256", secret).update(body, "utf8").digest("hex")}`

/** A delivery the receiver did not take. */
export class DeliveryFailed extends Data.TaggedError("DeliveryFailed")<{
  readonly url: string
  /** The HTTP status, when the receiver answered. */
  readonly status: number | null
  readonly reason: string
  /** Another try may succeed (no answer, 408, 429, 5xx). */
  readonly retryable: boolean
}> {
  override get message() {
    return `${this.url} did not take the notification: ${this.reason}`
  }
}

/** The id of one entry's delivery to one target: the same on every try, so a receiver can drop a repeat. */
export const deliveryId = (target: Pick<Target, "id">, entry: Pick<ReportEntry, "seq">) => `${target.id}-${entry.seq}`

const decode = ReportEvent.decoder(EngineEvents.engine)

/** What the event says, in a line a person reads: by its kind, from its decoded data (else its kind alone). */
export const headline = (raw: ReportEntry): string => {
  const entry = decode(raw)
  if (entry._tag === "Raw") return `${entry.agent}: ${entry.kind}`
  switch (entry.kind) {
    case "approval_requested": {
      const input = JSON.stringify(entry.data.input ?? {})
      return `${entry.agent} asks to use ${entry.data.tool} (${
        input.length > 200 ? `${input.slice(0, 200)}…` : input
      }): approve or deny it`
    }
    case "run_finished":
      return entry.data.ok
        ? `run ${entry.agent} finished ($${entry.data.costUsd.toFixed(4)})`
        : `run ${entry.agent} failed: ${entry.data.error?.message ?? "see the report log"}`
    case "verify_failed":
      return `${entry.agent}: a check failed: ${entry.data.command}`
    case "crashed":
      return `${entry.agent} crashed: ${entry.data.reason}`
    case "closed":
      return `${entry.agent} closed`
    case "parked":
      return `${entry.agent} parked at its usage limit until ${entry.data.until}`
    case "unparked":
      return `${entry.agent} unparked`
    case "budget_exceeded":
      return `${entry.agent} is over its budget`
    case "host_lost":
      return `host ${entry.data.host} was lost`
    default:
      return `${entry.agent}: ${entry.kind}`
  }
}

/** The dashboard page an entry is about. */
export const linkOf = (base: string, entry: ReportEntry) => {
  const page = entry.kind === EngineEvents.approvalRequested.kind
    ? "approvals"
    : entry.kind === EngineEvents.runFinished.kind
    ? `runs/${encodeURIComponent(entry.agent)}`
    : `agents/${encodeURIComponent(entry.agent)}`
  return new URL(page, base.endsWith("/") ? base : `${base}/`).href
}

/** The body a target gets for an entry. */
export const bodyOf = (target: Target, entry: ReportEntry): string => {
  const link = Option.map(target.dashboardUrl, (base) => linkOf(base, entry))
  if (target.format === "json") {
    return JSON.stringify({ ...entry, ...(Option.isSome(link) ? { link: link.value } : {}) })
  }
  const line = headline(entry)
  return JSON.stringify({ text: Option.match(link, { onNone: () => line, onSome: (url) => `${line} <${url}|open>` }) })
}

/**
 * A reason as it may be kept and shown: the target's URL, and its path and query (often its secret), replaced by
 * what people see of it. An error may quote the URL it was about.
 */
export const scrub = (target: Pick<Target, "url" | "shown">, reason: string): string => {
  const { pathname, search } = new URL(target.url)
  const secret = pathname + search
  const out = reason.replaceAll(target.url, target.shown)
  return secret.length > 1 ? out.replaceAll(secret, "/…") : out
}

const retryableStatus = (status: number) => status === 408 || status === 429 || status >= 500

/** POSTs a body to a target once, signed; succeeds on a 2xx with the status. */
export const post = Effect.fn("Delivery.post")(function*(target: Target, body: string, id: string) {
  return yield* Effect.tryPromise({
    try: (signal) =>
      fetch(target.url, {
        method: "POST",
        body,
        redirect: "manual",
        signal: AbortSignal.any([signal, AbortSignal.timeout(TIMEOUT_MS)]),
        headers: {
          "content-type": "application/json",
          "user-agent": "flotta-webhooks",
          "x-flotta-delivery": id,
          ...Option.match(target.secret, {
            onNone: () => ({}),
            onSome: (secret) => ({ "x-flotta-signature": signature(Redacted.value(secret), body) })
          })
        }
      }).then((response) =>
        // The body is read (and dropped) so the connection can be reused.
        response.arrayBuffer().then(() => response.status, () => response.status)
      ),
    catch: (error) =>
      new DeliveryFailed({
        url: target.shown,
        status: null,
        reason: scrub(
          target,
          error instanceof Error && error.cause instanceof Error
            ? `${error.message}: ${error.cause.message}`
            : error instanceof Error
            ? error.message
            : String(error)
        ),
        retryable: true
      })
  }).pipe(
    Effect.flatMap((status) =>
      status >= 200 && status < 300 ? Effect.succeed(status) : Effect.fail(
        new DeliveryFailed({
          url: target.shown,
          status,
          reason: `it answered ${status}`,
          retryable: retryableStatus(status)
        })
      )
    )
  )
})

/** A test event (`flotta notify test`): a `notify_test` entry, sent now, not kept. */
export const testEntry = (at: Date): ReportEntry => ({
  seq: 0,
  at: at.toISOString(),
  agent: "flotta",
  kind: notifyTest.kind,
  data: { message: "a test notification from flotta" } satisfies typeof notifyTest.data.Type
})
