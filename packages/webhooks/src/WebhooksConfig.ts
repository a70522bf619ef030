/**
 * The config's `notify` and `github` sections as Schemas, and what they become: each notification target with
 * the report kinds it wants, and the GitHub mappings from an event to a routine or a run template. The field
 * descriptions are the config reference's prose.
 */
import { NAME_PATTERN } from "@flotta/core/AgentView"
import { exact } from "@flotta/core/Decode"
import type { Rejected } from "@flotta/core/Spec"
import { Data, Option, Redacted, Schema } from "effect"
import { createHash } from "node:crypto"

/** The events a target may ask for, and the report kinds each one is. */
export const EVENTS = {
  approval_requested: "approval_requested",
  run_finished: "run_finished",
  verify_failed: "verify_failed",
  agent_crashed: "crashed",
  agent_closed: "closed",
  parked: "parked",
  unparked: "unparked",
  budget_exceeded: "budget_exceeded",
  host_lost: "host_lost"
} as const
export type NotifyEvent = keyof typeof EVENTS | "*"

export { OWN_KINDS } from "./WebhooksEvents.js"

const Secret = Schema.String.pipe(Schema.minLength(16, { message: () => "a secret of at least 16 characters" }))

const WebUrl = Schema.String.pipe(
  Schema.filter((text) => {
    try {
      const url = new URL(text)
      return url.protocol === "http:" || url.protocol === "https:" || "an http:// or https:// URL"
    } catch {
      return "an http:// or https:// URL"
    }
  })
)

const EventName = Schema.Literal(...(Object.keys(EVENTS) as Array<keyof typeof EVENTS>), "*")

export const NotifyTarget = Schema.Struct({
  url: Schema.propertySignature(WebUrl).annotations({
    description: "Where each event is POSTed. Its path is treated as a secret (a Slack webhook's is): " +
      "status shows only its origin."
  }),
  events: Schema.propertySignature(Schema.NonEmptyArray(EventName)).annotations({
    description: "What is sent: `approval_requested`, `run_finished`, `verify_failed`, `agent_crashed`, " +
      "`agent_closed`, `parked`, `unparked`, `budget_exceeded`, `host_lost`, or `\"*\"` for every report entry."
  }),
  secret: exact(Secret).annotations({
    description: "Signs each body: `X-Flotta-Signature: sha256=<hex HMAC-SHA256 of the body>`."
  }),
  format: exact(Schema.Literal("json", "slack")).annotations({
    description: "`json` (default): the report entry as JSON; `slack`: an incoming-webhook message with a link " +
      "to the dashboard."
  }),
  dashboardUrl: exact(WebUrl).annotations({
    description: "The dashboard's address the messages link to (default: the configured dashboard's)."
  })
})
export type NotifyTarget = typeof NotifyTarget.Type

export const NotifySection = Schema.Array(NotifyTarget).annotations({
  description: "Webhooks told of chosen events, at least once, in order, through an outbox in the store."
})

const GITHUB_EVENTS = ["issues", "issue_comment", "pull_request", "pull_request_review", "check_run", "workflow_run"]

const GithubEvent = Schema.String.pipe(
  Schema.filter((text) =>
    GITHUB_EVENTS.includes(text.split(".")[0]!) && /^[a-z_]+(\.[a-z_]+)?$/.test(text) ||
    `a GitHub event, optionally with its action: ${GITHUB_EVENTS.join(", ")} (e.g. "issues.labeled")`
  )
)
const Name = Schema.String.pipe(Schema.pattern(NAME_PATTERN, { message: () => "a routine or template name" }))

export const GithubMapping = Schema.Struct({
  event: Schema.propertySignature(GithubEvent).annotations({
    description: "`<event>` or `<event>.<action>`: issues, issue_comment, pull_request, pull_request_review, " +
      "check_run, workflow_run."
  }),
  label: exact(Schema.String).annotations({ description: "Only an issue or pull request carrying this label." }),
  command: exact(Schema.String.pipe(Schema.minLength(1))).annotations({
    description: "Only a comment (or review) whose body starts with this, e.g. `/flotta`."
  }),
  conclusion: exact(Schema.String).annotations({
    description: "Only a check_run or workflow_run with this conclusion, e.g. `failure`."
  }),
  repository: exact(Schema.String).annotations({ description: "Only events of this `owner/name`." }),
  routine: exact(Name).annotations({ description: "The routine it fires (with the event in its prompt)." }),
  run: exact(Name).annotations({ description: "The run template it starts (with the event in its prompt)." })
}).pipe(
  Schema.filter((m) =>
    (m.routine === undefined) !== (m.run === undefined) || {
      path: ["routine"],
      message: "name exactly one of `routine` and `run`"
    }
  )
)
export type GithubMapping = typeof GithubMapping.Type

export const DEFAULT_MAX_BODY = 1024 * 1024

export const GithubSection = Schema.Struct({
  secret: Schema.propertySignature(Secret).annotations({
    description: "The webhook's secret, as set on GitHub: every delivery's `X-Hub-Signature-256` is checked."
  }),
  on: Schema.propertySignature(Schema.Array(GithubMapping)).annotations({
    description: "Which events fire what: the first mapping that matches each routine or template fires it once."
  }),
  maxBodyBytes: exact(Schema.Number.pipe(Schema.int(), Schema.between(1024, 25 * 1024 * 1024))).annotations({
    description: `The largest delivery read (default ${DEFAULT_MAX_BODY} bytes); a larger one gets 413.`
  })
}).annotations({ description: "`POST /hooks/github` on the fleet's HTTP server: GitHub events fire routines or runs." })
export type GithubSection = typeof GithubSection.Type

/** What is wrong with a name a mapping fires (`undefined`: nothing), by what it names. */
export interface MappingTargets {
  readonly routine: (name: string) => string | undefined
  readonly run: (name: string) => string | undefined
}

/**
 * The section with only the mappings whose routine or run template is there (`targets` says what is wrong with
 * a name); each other one is rejected at its path (`github.on[1].routine`), and the rest are kept.
 */
export const checkMappings = (
  section: GithubSection,
  targets: MappingTargets
): { readonly section: GithubSection; readonly rejected: ReadonlyArray<Rejected> } => {
  const rejected: Array<Rejected> = []
  const on = section.on.filter((mapping, i) => {
    const [field, name] = mapping.routine !== undefined
      ? ["routine", mapping.routine] as const
      : ["run", mapping.run!] as const
    const problem = targets[field](name)
    if (problem !== undefined) {
      rejected.push({ entry: `github.on[${i}]`, name: null, path: `github.on[${i}].${field}`, message: problem })
    }
    return problem === undefined
  })
  return { section: { ...section, on }, rejected }
}

/** What the layer is given: the decoded sections, and where the dashboard is, for links. */
export interface WebhooksInput {
  readonly notify?: ReadonlyArray<NotifyTarget> | undefined
  readonly github?: GithubSection | undefined
  readonly dashboardUrl?: string | undefined
}

/** One target as the notifier keeps it. */
export interface Target {
  /** A stable short id of its URL: the key of its state in the store, and part of each delivery id. */
  readonly id: string
  readonly url: string
  /** The URL as people see it: its origin only (a webhook's path is often its secret). */
  readonly shown: string
  /** The report kinds it takes; none for every kind but the notifier's own. */
  readonly kinds: Option.Option<ReadonlyArray<string>>
  readonly events: ReadonlyArray<NotifyEvent>
  readonly secret: Option.Option<Redacted.Redacted<string>>
  readonly format: "json" | "slack"
  readonly dashboardUrl: Option.Option<string>
}

export const targetId = (url: string) => createHash("sha256").update(url).digest("hex").slice(0, 12)

export const targetOf = (target: NotifyTarget, dashboardUrl?: string): Target => {
  const every = target.events.includes("*")
  return {
    id: targetId(target.url),
    url: target.url,
    shown: `${new URL(target.url).origin}/…`,
    kinds: every
      ? Option.none()
      : Option.some(target.events.flatMap((event) => event === "*" ? [] : [EVENTS[event]])),
    events: target.events,
    secret: Option.map(Option.fromNullable(target.secret), Redacted.make),
    format: target.format ?? "json",
    dashboardUrl: Option.fromNullable(target.dashboardUrl ?? dashboardUrl)
  }
}

/** The sections cannot be served as written; the reason names the field. */
export class WebhooksConfigError extends Data.TaggedError("WebhooksConfigError")<{ readonly reason: string }> {
  override get message() {
    return `webhooks not started: ${this.reason}`
  }
}
