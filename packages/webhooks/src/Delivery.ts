/**
 * One POST of one event to one target: the body in the target's format (the report entry as JSON, or a Slack
 * incoming-webhook message linking to the dashboard), signed with the target's secret, with a delivery id the
 * receiver can drop a repeat by. A receiver that answers 2xx has it; 408, 429, a 5xx or no answer is worth
 * another try; any other answer is final.
 */
import type { ReportEntry } from "@flotta/core/ReportLog"
import { Data, Effect, Option, Predicate, Redacted } from "effect"
import { createHmac } from "node:crypto"
import type { Target } from "./WebhooksConfig.js"

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

/** What the event says, in a line a person reads. */
export const headline = (entry: ReportEntry): string => {
  const data: Readonly<Record<string, unknown>> = Predicate.isRecord(entry.data) ? entry.data : {}
  const said = (key: string) => (typeof data[key] === "string" ? String(data[key]) : undefined)
  switch (entry.kind) {
    case "approval_requested": {
      const input = JSON.stringify(data["input"] ?? {})
      return `${entry.agent} asks to use ${said("tool") ?? "a tool"} (${
        input.length > 200 ? `${input.slice(0, 200)}…` : input
      }): approve or deny it`
    }
    case "run_finished":
      return data["ok"] === true
        ? `run ${entry.agent} finished ($${Number(data["costUsd"] ?? 0).toFixed(4)})`
        : `run ${entry.agent} failed: ${messageOf(data["error"]) ?? "see the report log"}`
    case "verify_failed":
      return `${entry.agent}: a check failed: ${said("check") ?? said("command") ?? ""}`.trimEnd()
    case "crashed":
      return `${entry.agent} crashed${said("reason") === undefined ? "" : `: ${said("reason")}`}`
    case "closed":
      return `${entry.agent} closed`
    case "parked":
      return `${entry.agent} parked at its usage limit${said("until") === undefined ? "" : ` until ${said("until")}`}`
    case "unparked":
      return `${entry.agent} unparked`
    case "budget_exceeded":
      return `${entry.agent} is over its budget`
    case "host_lost":
      return `host ${said("host") ?? entry.agent} was lost`
    default:
      return `${entry.agent}: ${entry.kind}`
  }
}

const messageOf = (error: unknown) =>
  typeof error === "object" && error !== null && "message" in error && typeof error.message === "string"
    ? error.message
    : undefined

/** The dashboard page an entry is about. */
export const linkOf = (base: string, entry: ReportEntry) => {
  const page = entry.kind === "approval_requested"
    ? "approvals"
    : entry.kind === "run_finished"
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
export const post = (target: Target, body: string, id: string): Effect.Effect<number, DeliveryFailed> =>
  Effect.tryPromise({
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

/** A test event (`flotta notify test`): a `notify_test` entry, sent now, not kept. */
export const testEntry = (at: Date): ReportEntry => ({
  seq: 0,
  at: at.toISOString(),
  agent: "flotta",
  kind: "notify_test",
  data: { message: "a test notification from flotta" }
})
