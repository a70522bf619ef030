/**
 * GitHub's deliveries as data: the signature check (`X-Hub-Signature-256`), the parts of each event's payload a
 * mapping reads (decoded by Schema: GitHub's shapes, every other field ignored), which mappings an event matches,
 * and the event told in words for the prompt of what it fires.
 */
import { same } from "@flotta/core/HttpGuard"
import { Either, Schema } from "effect"
import { signature } from "./Delivery.js"
import type { GithubMapping } from "./WebhooksConfig.js"
import type { Facts } from "./WebhooksEvents.js"

/** The body is the one GitHub signed with the secret. */
export const verify = (secret: string, body: string, header: string | undefined): boolean =>
  header !== undefined && same(header.trim(), signature(secret, body))

const Label = Schema.Struct({ name: Schema.String })
const User = Schema.Struct({ login: Schema.String })
const Text = Schema.NullishOr(Schema.String)
const Issue = Schema.Struct({
  number: Schema.Number,
  title: Schema.String,
  body: Text,
  html_url: Schema.String,
  labels: Schema.optionalWith(Schema.Array(Label), { default: () => [] }),
  user: Schema.optional(User)
})
const PullRequest = Schema.Struct({
  ...Issue.fields,
  head: Schema.Struct({ ref: Schema.String, sha: Schema.String }),
  base: Schema.Struct({ ref: Schema.String })
})

/** The fields every mapped event may carry. */
export const Payload = Schema.Struct({
  action: Schema.optional(Schema.String),
  repository: Schema.optional(Schema.Struct({ full_name: Schema.String })),
  sender: Schema.optional(User),
  label: Schema.optional(Label),
  issue: Schema.optional(Issue),
  comment: Schema.optional(Schema.Struct({ body: Text, html_url: Schema.String, user: Schema.optional(User) })),
  pull_request: Schema.optional(PullRequest),
  review: Schema.optional(
    Schema.Struct({ state: Schema.String, body: Text, html_url: Schema.String, user: Schema.optional(User) })
  ),
  check_run: Schema.optional(Schema.Struct({
    name: Schema.String,
    status: Schema.String,
    conclusion: Text,
    head_sha: Schema.String,
    html_url: Text,
    output: Schema.optional(Schema.Struct({ title: Text, summary: Text })),
    check_suite: Schema.optional(Schema.Struct({ head_branch: Text }))
  })),
  workflow_run: Schema.optional(Schema.Struct({
    name: Text,
    run_number: Schema.Number,
    status: Text,
    conclusion: Text,
    head_branch: Text,
    head_sha: Schema.String,
    html_url: Schema.String
  }))
})
export type Payload = typeof Payload.Type

/** The delivery's JSON as a payload, or why it is not one. */
export const decode = (body: string): Either.Either<Payload, string> => {
  let json: unknown
  try {
    json = JSON.parse(body)
  } catch {
    return Either.left("the body is not JSON")
  }
  return Either.mapLeft(
    Schema.decodeUnknownEither(Payload)(json, { onExcessProperty: "ignore" }),
    (error) => `not the payload GitHub sends for this event: ${error.message.split("\n").slice(0, 4).join(" ")}`
  )
}

/** `issues.labeled`: the event and its action, as mappings name them. */
export const eventName = (event: string, payload: Payload) =>
  payload.action === undefined ? event : `${event}.${payload.action}`

const labelsOf = (payload: Payload) => [
  ...(payload.label === undefined ? [] : [payload.label.name]),
  ...(payload.issue?.labels ?? []).map((l) => l.name),
  ...(payload.pull_request?.labels ?? []).map((l) => l.name)
]

const conclusionOf = (payload: Payload) => payload.check_run?.conclusion ?? payload.workflow_run?.conclusion

const commandText = (payload: Payload) => payload.comment?.body ?? payload.review?.body ?? undefined

/** Whether a mapping takes this event. */
export const matches = (mapping: GithubMapping, event: string, payload: Payload): boolean => {
  const [wanted, action] = mapping.event.split(".")
  if (wanted !== event || (action !== undefined && action !== payload.action)) return false
  if (mapping.repository !== undefined && payload.repository?.full_name !== mapping.repository) return false
  if (mapping.label !== undefined && !labelsOf(payload).includes(mapping.label)) return false
  if (mapping.conclusion !== undefined && conclusionOf(payload) !== mapping.conclusion) return false
  if (mapping.command !== undefined && !(commandText(payload) ?? "").trimStart().startsWith(mapping.command)) {
    return false
  }
  return true
}

/** What the event names, for the report log: the facts, not the whole payload. */
export const facts = (event: string, payload: Payload): Facts => {
  const conclusion = conclusionOf(payload)
  return {
    event: eventName(event, payload),
    ...(payload.repository === undefined ? {} : { repository: payload.repository.full_name }),
    ...(payload.issue === undefined ? {} : { issue: payload.issue.number }),
    ...(payload.pull_request === undefined ? {} : { pullRequest: payload.pull_request.number }),
    ...(payload.check_run === undefined ? {} : { check: payload.check_run.name }),
    ...(payload.workflow_run?.name == null ? {} : { workflow: payload.workflow_run.name }),
    ...(conclusion == null ? {} : { conclusion })
  }
}

/** The part of a long text a prompt gets. */
const clip = (text: string | null | undefined, max = 8000) =>
  text == null || text.length === 0 ? undefined : text.length <= max ? text : `${text.slice(0, max)}\n[… cut]`

const lines = (...parts: ReadonlyArray<string | undefined>) => parts.filter((p) => p !== undefined).join("\n")

/** The event told in words: what the routine's or the run's prompt gets. */
export const describe = (event: string, payload: Payload): string => {
  const repo = payload.repository?.full_name ?? "the repository"
  const by = payload.sender === undefined ? "" : ` by ${payload.sender.login}`
  const head = `GitHub event ${eventName(event, payload)} in ${repo}${by}.`
  const { check_run: check, comment, issue, pull_request: pr, review, workflow_run: run } = payload
  if (check !== undefined) {
    return lines(
      head,
      `The check "${check.name}" completed with ${check.conclusion ?? check.status} on commit ${check.head_sha}` +
        (check.check_suite?.head_branch == null ? "." : ` (branch ${check.check_suite.head_branch}).`),
      check.html_url == null ? undefined : `Details: ${check.html_url}`,
      clip(check.output?.title),
      clip(check.output?.summary)
    )
  }
  if (run !== undefined) {
    return lines(
      head,
      `The workflow "${run.name ?? "?"}" run #${run.run_number} completed with ${run.conclusion ?? run.status} ` +
        `on commit ${run.head_sha}${run.head_branch == null ? "" : ` (branch ${run.head_branch})`}.`,
      `Details: ${run.html_url}`
    )
  }
  const subject = pr ?? issue
  const what = subject === undefined
    ? undefined
    : `${pr === undefined ? "Issue" : "Pull request"} #${subject.number}: ${subject.title}\n${subject.html_url}`
  return lines(
    head,
    what,
    pr === undefined ? undefined : `Branch ${pr.head.ref} (${pr.head.sha}) into ${pr.base.ref}.`,
    payload.label === undefined ? undefined : `Label: ${payload.label.name}`,
    comment === undefined
      ? undefined
      : `Comment by ${comment.user?.login ?? "someone"} (${comment.html_url}):\n${clip(comment.body) ?? ""}`,
    review === undefined
      ? undefined
      : `Review ${review.state} by ${review.user?.login ?? "someone"} (${review.html_url}):\n${
        clip(review.body) ?? ""
      }`,
    comment === undefined && review === undefined ? clip(subject?.body) : undefined
  )
}

/** The mappings an event fires: each routine or template once, the first mapping that names it. */
export const fired = (
  mappings: ReadonlyArray<GithubMapping>,
  event: string,
  payload: Payload
): ReadonlyArray<GithubMapping> => {
  const seen = new Set<string>()
  return mappings.filter((m) => {
    const key = m.routine === undefined ? `run:${m.run}` : `routine:${m.routine}`
    if (seen.has(key) || !matches(m, event, payload)) return false
    seen.add(key)
    return true
  })
}
