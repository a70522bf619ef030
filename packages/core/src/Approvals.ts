/**
 * Human approvals: a tool call the policy leaves to a person (the `ask` forms) waits here as a pending approval
 * until someone decides it (`decide`, from code, MCP, the CLI or the dashboard), its time runs out
 * (`approvalTimeout`, a deny the model sees), or the turn that asked ends first (interrupt, close, crash: the
 * child withdraws the request). Pending approvals are kept in the store; after a host restart they show as
 * expired, because the child that asked is gone. This is the fleet's `PendingDecisions`.
 */
import { Clock, Deferred, Duration, Effect, Layer, Option, PubSub, Schema, Stream } from "effect"
import { randomBytes } from "node:crypto"
import { ApprovalExpired, ApprovalNotFound, InvalidSpec } from "./Errors.js"
import { FleetConfig } from "./FleetConfig.js"
import { iso } from "./internal/turnRecord.js"
import { PendingDecisions } from "./Permission.js"
import type { PendingAnswer, PermissionRequest } from "./Permission.js"
import { ReportLog } from "./ReportLog.js"
import { Store } from "./Store.js"

export const ApprovalSchema = Schema.Struct({
  id: Schema.String,
  agent: Schema.String,
  turnId: Schema.NullOr(Schema.String),
  tool: Schema.String,
  input: Schema.Record({ key: Schema.String, value: Schema.Unknown }),
  requestedAt: Schema.String,
  expiresAt: Schema.String,
  status: Schema.Literal("pending", "allowed", "denied", "expired"),
  decidedAt: Schema.NullOr(Schema.String),
  /** Who or what ended it: the surface a human used (`api`, `mcp`, `cli`, ...), or `timeout`, `interrupted`, ... */
  decidedBy: Schema.NullOr(Schema.String),
  message: Schema.NullOr(Schema.String)
})
export type Approval = Schema.Schema.Type<typeof ApprovalSchema>

/** Who or what ends an approval without a human: a surface may not take these names. */
export const ENDINGS: ReadonlySet<string> = new Set([
  "timeout",
  "withdrawn",
  "interrupted",
  "closed",
  "crashed",
  "host_restart"
])

/** The surface a human decided on: a short lower-case word (`api`, `mcp`, `cli`, `dashboard`). */
export const Surface = Schema.String.pipe(
  Schema.pattern(/^[a-z][a-z0-9_-]{0,31}$/, {
    message: () => "a short lower-case word, such as mcp, cli or dashboard"
  }),
  Schema.filter((by) => !ENDINGS.has(by) || `"${by}" names how an approval ends without a decision`)
)

/** A human's decision. `always` allows the tool for the rest of the agent's life; `by` names the surface. */
export const ApprovalDecisionSchema = Schema.Struct({
  behavior: Schema.Literal("allow", "deny"),
  message: Schema.optional(Schema.String),
  updatedInput: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.Unknown })),
  always: Schema.optional(Schema.Boolean),
  by: Schema.optional(Surface)
})
export type ApprovalDecision = Schema.Schema.Type<typeof ApprovalDecisionSchema>

export interface ApprovalQuery {
  readonly agent?: string
  /** Also the approvals that ended lately (the newest 200), newest first after the pending ones. */
  readonly all?: boolean
}

/** Where the approvals are kept in the store. */
const STATE_KEY = "approvals"
/** Ended approvals kept for `approvals({ all: true })` and for a clear error on a late decision. */
const ENDED_KEPT = 200

const SavedApprovals = Schema.Struct({ pending: Schema.Array(ApprovalSchema), ended: Schema.Array(ApprovalSchema) })
const decodeSaved = Schema.decodeUnknownOption(SavedApprovals)
const decodeDecision = Schema.decodeUnknownEither(ApprovalDecisionSchema, { onExcessProperty: "error" })

const newId = () => `ap_${randomBytes(6).toString("base64url").toLowerCase().replace(/[^a-z0-9]/g, "x")}`

/** How an approval ended: its new status, who or what ended it, and the answer the child gets. */
interface Ending {
  readonly status: "allowed" | "denied" | "expired"
  readonly by: string
  readonly message: string | null
  readonly answer: PendingAnswer
}

interface Open {
  readonly approval: Approval
  readonly deferred: Deferred.Deferred<PendingAnswer>
}

const withdrawn = (tool: string, by: string, why: string): Ending => ({
  status: "expired",
  by,
  message: why,
  answer: { behavior: "deny", message: `The approval for this ${tool} call ended without a decision: ${why}.` }
})

export class Approvals extends Effect.Service<Approvals>()("@flotta/core/Approvals", {
  scoped: Effect.gen(function*() {
    const settings = yield* FleetConfig
    const reports = yield* ReportLog
    const store = yield* Store
    const timeoutMs = Duration.toMillis(settings.approvalTimeout)
    const open = new Map<string, Open>()
    /** Ended approvals, oldest first. */
    const ended: Array<Approval> = []
    const requested = yield* PubSub.unbounded<Approval>()
    yield* Effect.addFinalizer(() => PubSub.shutdown(requested))

    // Changes made together are saved together: one write per turn of the event loop, not one per change (the
    // store writes behind anyway, so this delays nothing that was durable sooner).
    let saving = false
    const save = () => {
      if (saving) return
      saving = true
      queueMicrotask(() => {
        saving = false
        store.saveState(STATE_KEY, { pending: [...open.values()].map((o) => o.approval), ended: ended.slice() })
      })
    }

    const remember = (approval: Approval) => {
      ended.push(approval)
      if (ended.length > ENDED_KEPT) ended.splice(0, ended.length - ENDED_KEPT)
    }

    // What an earlier host left pending cannot be decided any more: the child that asked is gone.
    const saved = Option.flatMap(yield* store.loadState(STATE_KEY), decodeSaved)
    if (Option.isSome(saved)) {
      const now = iso(yield* Clock.currentTimeMillis)
      saved.value.ended.forEach(remember)
      for (const approval of saved.value.pending) {
        const why = "the host restarted, so the process that asked is gone"
        remember({ ...approval, status: "expired", decidedAt: now, decidedBy: "host_restart", message: why })
        yield* reports.post(approval.agent, "approval_decided", {
          id: approval.id,
          tool: approval.tool,
          behavior: "deny",
          status: "expired",
          by: "host_restart",
          message: why
        }, approval.turnId ?? undefined)
      }
      save()
    }

    /** Ends an open approval (once): the child gets its answer, the store and the report log are told. */
    const settle = (id: string, ending: Ending): Effect.Effect<Approval | undefined> =>
      Effect.gen(function*() {
        const entry = open.get(id)
        if (entry === undefined) return undefined
        open.delete(id)
        const done: Approval = {
          ...entry.approval,
          status: ending.status,
          decidedAt: iso(yield* Clock.currentTimeMillis),
          decidedBy: ending.by,
          message: ending.message
        }
        remember(done)
        save()
        yield* reports.post(done.agent, "approval_decided", {
          id,
          tool: done.tool,
          behavior: ending.answer.behavior,
          status: ending.status,
          by: ending.by,
          ...(ending.message === null ? {} : { message: ending.message }),
          ...(ending.answer.always === true ? { always: true } : {})
        }, done.turnId ?? undefined)
        yield* Deferred.succeed(entry.deferred, ending.answer)
        return done
      })

    const timedOut = (tool: string): Ending => {
      const why = `no decision within ${Duration.format(settings.approvalTimeout)}`
      return {
        status: "expired",
        by: "timeout",
        message: why,
        answer: {
          behavior: "deny",
          message: `Nobody approved this ${tool} call in time (${why}), so it is denied. Do not retry it unasked.`,
          by: "timeout"
        }
      }
    }

    /** A request waits for its decision; giving up on the wait (the child withdrew it) ends it as expired. */
    const request = Effect.fn("Approvals.request")((req: PermissionRequest): Effect.Effect<PendingAnswer> =>
      Effect.uninterruptibleMask((restore) =>
        Effect.gen(function*() {
          const now = yield* Clock.currentTimeMillis
          const approval: Approval = {
            id: newId(),
            agent: req.agent,
            turnId: req.turnId,
            tool: req.tool,
            input: req.input,
            requestedAt: iso(now),
            expiresAt: iso(now + timeoutMs),
            status: "pending",
            decidedAt: null,
            decidedBy: null,
            message: null
          }
          const deferred = yield* Deferred.make<PendingAnswer>()
          open.set(approval.id, { approval, deferred })
          save()
          yield* reports.post(req.agent, "approval_requested", {
            id: approval.id,
            tool: req.tool,
            input: req.input,
            expiresAt: approval.expiresAt
          }, req.turnId ?? undefined)
          yield* PubSub.publish(requested, approval)
          const wait = Deferred.await(deferred).pipe(
            Effect.timeoutOption(Duration.millis(timeoutMs)),
            Effect.flatMap(Option.match({
              onSome: Effect.succeed,
              onNone: () => Effect.zipRight(settle(approval.id, timedOut(req.tool)), Deferred.await(deferred))
            }))
          )
          return yield* restore(wait).pipe(
            Effect.onInterrupt(() =>
              settle(approval.id, withdrawn(req.tool, "withdrawn", "the request was withdrawn (the turn ended)"))
            )
          )
        })
      )
    )

    /** A human's decision on a pending approval. */
    const decide = Effect.fn("Approvals.decide")(function*(
      id: string,
      decision: ApprovalDecision
    ): Effect.fn.Return<Approval, ApprovalNotFound | ApprovalExpired | InvalidSpec> {
      const given = decodeDecision(decision)
      if (given._tag === "Left") {
        return yield* new InvalidSpec({ path: "decision", reason: String(given.left.message) })
      }
      const { always, behavior, by = "api", message, updatedInput } = given.right
      const entry = open.get(id)
      if (entry !== undefined && (yield* Clock.currentTimeMillis) >= Date.parse(entry.approval.expiresAt)) {
        yield* settle(id, timedOut(entry.approval.tool)) // its timer is about to ring: the decision is late
      }
      const live = open.get(id)
      if (live === undefined) {
        const old = [...ended].reverse().find((a) => a.id === id)
        if (old === undefined) return yield* new ApprovalNotFound({ id, pending: [...open.keys()] })
        return yield* new ApprovalExpired({
          id,
          agent: old.agent,
          tool: old.tool,
          status: old.status as "allowed" | "denied" | "expired",
          reason: old.status === "expired"
            ? `it expired at ${old.decidedAt} (${old.message ?? old.decidedBy})`
            : `it was ${old.status} already, by ${old.decidedBy} at ${old.decidedAt}`
        })
      }
      const ending: Ending = behavior === "allow"
        ? {
          status: "allowed",
          by,
          message: message ?? null,
          answer: {
            behavior: "allow",
            by,
            ...(updatedInput === undefined ? {} : { updatedInput }),
            ...(always === true ? { always: true } : {})
          }
        }
        : {
          status: "denied",
          by,
          message: message ?? null,
          answer: {
            behavior: "deny",
            by,
            message: message === undefined
              ? "A human denied this tool call."
              : `A human denied this tool call: ${message}`
          }
        }
      return (yield* settle(id, ending))!
    })

    /** The agent's pending approvals end without a decision (its turn was interrupted, it closed or crashed). */
    const expire = Effect.fn("Approvals.expire")((agent: string, reason: string) =>
      Effect.forEach(
        [...open.values()].filter((o) => o.approval.agent === agent),
        (o) => settle(o.approval.id, withdrawn(o.approval.tool, reason, `the agent's turn ended (${reason})`)),
        { discard: true }
      )
    )

    /** Pending approvals, oldest first; with `all`, then the ones that ended lately, newest first. */
    const approvals = (query: ApprovalQuery = {}) =>
      Effect.sync((): ReadonlyArray<Approval> => {
        const mine = (a: Approval) => query.agent === undefined || a.agent === query.agent
        const pending = [...open.values()].map((o) => o.approval).filter(mine)
        return query.all === true ? [...pending, ...ended.filter(mine).reverse()] : pending
      })

    /** Each new pending approval, from the moment the stream runs. */
    const requests: Stream.Stream<Approval> = Stream.fromPubSub(requested)
    /** The same, subscribed once this effect has run (nothing requested after that is missed). */
    const subscribe = Effect.map(PubSub.subscribe(requested), (queue) => Stream.fromQueue(queue))

    return { request, decide, expire, approvals, requests, subscribe } as const
  })
}) {
  /** The fleet's `PendingDecisions`: a human decides. */
  static readonly pendingDecisions = Layer.effect(
    PendingDecisions,
    Effect.map(Approvals, (approvals) => ({ decide: approvals.request, expire: approvals.expire }))
  )
}
