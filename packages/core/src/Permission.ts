/**
 * Permission as data. One policy decides two things: the CLI flags a child starts with (which tools the model
 * is offered and which need no prompt), and the answer to every `can_use_tool` request the child sends.
 * Both are needed: flags alone leave tools that never prompt, and answers alone let the model see tools it
 * may not use. The `Permission` service answers requests; a decision the policy leaves to someone else
 * (the `ask` forms, or a function answering `{ behavior: "ask" }`) goes to the `PendingDecisions` seam, where
 * human approvals (`Approvals`) plug in.
 */
import { Context, Effect, Layer, Schema } from "effect"

/** Tools that can only read. Glob and Grep are absent from CLI 2.1.332 but come back in other versions. */
export const READ_ONLY_TOOLS: ReadonlyArray<string> = ["Read", "Glob", "Grep"]

export type PermissionDecision =
  | { readonly behavior: "allow"; readonly updatedInput?: Record<string, unknown> }
  | { readonly behavior: "deny"; readonly message: string; readonly interrupt?: boolean }

/** What a policy may answer: a decision, or "someone else decides" (a pending decision). */
export type PolicyAnswer = PermissionDecision | { readonly behavior: "ask" }

/** A policy in code: may answer synchronously, with a Promise, or with an Effect. */
export type PermissionFunction = (
  tool: string,
  input: Record<string, unknown>
) => PolicyAnswer | Promise<PolicyAnswer> | Effect.Effect<PolicyAnswer>

/**
 * An agent's permission: `"read_only"`, `"full"`, `{ allow: [tools] }`, `{ allow, ask }` (the `ask` tools wait
 * for a human), `"ask"` (read-only tools are allowed, every other tool waits for a human), or a function.
 */
export type Policy =
  | "read_only"
  | "full"
  | "ask"
  | { readonly allow: ReadonlyArray<string>; readonly ask?: ReadonlyArray<string> }
  | PermissionFunction

/** One `can_use_tool` request, with who asked. */
export interface PermissionRequest {
  readonly agent: string
  /** The turn in flight, when there is one. */
  readonly turnId: string | null
  readonly tool: string
  readonly input: Record<string, unknown>
  readonly toolUseId?: string
}

const ToolRule = Schema.String.pipe(Schema.minLength(1))

/** The data forms, as they appear in config files. A tool is either allowed or asked about, not both. */
export const PermissionData = Schema.Union(
  Schema.Literal("read_only", "full", "ask"),
  Schema.Struct({ allow: Schema.Array(ToolRule), ask: Schema.optionalWith(Schema.Array(ToolRule), { exact: true }) })
    .pipe(
      Schema.filter((policy) => {
        const both = (policy.ask ?? []).filter((tool) => policy.allow.includes(tool))
        return both.length === 0 || `${both.join(", ")} cannot be both in allow and in ask`
      })
    )
)
export type PermissionData = typeof PermissionData.Type

/** `Bash(git *)` → `Bash`: the tool a rule is about. */
const toolOfRule = (rule: string): string => {
  const paren = rule.indexOf("(")
  return paren === -1 ? rule : rule.slice(0, paren)
}

/**
 * The CLI flags for a permission. `--tools` restricts what the model is offered at all; `--allowedTools` is what
 * runs without a prompt, so every other offered tool comes to the host as a `can_use_tool` request. The
 * `alwaysAsk` tools (a sandbox's guarded ones) are offered as allowed, but never pre-allowed as a whole: each call
 * comes to the host (a rule scoped to a path, such as `Edit(src/**)`, stays the CLI's to apply).
 */
export const flags = (permission: Policy, alwaysAsk: ReadonlyArray<string> = []): ReadonlyArray<string> => {
  if (typeof permission === "function" || permission === "full") return []
  const { allow, ask } = asData(permission)
  const preAllowed = allow.filter((rule) => !alwaysAsk.includes(rule))
  // With `"*"` every tool is offered; the allowed ones need no prompt, and the host asks a human about the rest.
  if (ask.includes(ANY_TOOL)) return ["--allowedTools", preAllowed.join(",")]
  const tools = [...new Set([...allow, ...ask].map(toolOfRule))]
  return ["--tools", tools.join(","), "--allowedTools", preAllowed.join(",")]
}

/** In `ask`: every tool that is not allowed. */
export const ANY_TOOL = "*"

/** The data forms as one shape: `"read_only"` allows the read-only tools; `"ask"` asks about every other tool. */
const asData = (
  permission: "read_only" | "ask" | { readonly allow: ReadonlyArray<string>; readonly ask?: ReadonlyArray<string> }
) =>
  permission === "read_only"
    ? { allow: READ_ONLY_TOOLS, ask: [] }
    : permission === "ask"
    ? { allow: READ_ONLY_TOOLS, ask: [ANY_TOOL] }
    : { allow: permission.allow, ask: permission.ask ?? [] }

/**
 * Whether a permission lets the agent change files or run commands without a human's say (a session may not,
 * in config): a write a human approves each time is not one.
 */
export const canWrite = (permission: Policy): boolean => {
  if (typeof permission === "function" || permission === "full") return true
  if (permission === "read_only" || permission === "ask") return false
  return permission.allow.some((rule) => !READ_ONLY_TOOLS.includes(toolOfRule(rule)))
}

const deny = (tool: string, why: string): PermissionDecision => ({
  behavior: "deny",
  message: `Permission denied by flotta: ${tool} ${why}`
})

/** The policy's own answer to one request. A policy function that throws or rejects denies. */
export const answer = Effect.fnUntraced(function*(permission: Policy, tool: string, input: Record<string, unknown>) {
  if (permission === "full") return yield* Effect.succeed({ behavior: "allow" })
  if (permission === "read_only") {
    return yield* Effect.succeed(
      READ_ONLY_TOOLS.includes(tool) ? { behavior: "allow" } : deny(tool, "is not allowed for a read-only agent")
    )
  }
  if (typeof permission !== "function") {
    // A scoped rule such as `Bash(git *)` is enforced by the CLI itself; what it still asks about is outside it.
    const { allow, ask } = asData(permission)
    if (allow.includes(tool)) return yield* Effect.succeed({ behavior: "allow" })
    if (ask.some((rule) => rule === ANY_TOOL || toolOfRule(rule) === tool)) {
      return yield* Effect.succeed({ behavior: "ask" })
    }
    return yield* Effect.succeed(deny(tool, `is not in this agent's allow list (${allow.join(", ")})`))
  }
  return yield* Effect.suspend(() => {
    const answer = permission(tool, input)
    if (Effect.isEffect(answer)) return answer
    if (answer instanceof Promise) return Effect.promise(() => answer)
    return Effect.succeed(answer)
  }).pipe(
    Effect.map(normalize),
    Effect.catchAllCause((cause) => Effect.succeed(deny(tool, `was refused: the permission policy failed (${cause})`)))
  )
})

/** Guards against a policy returning something that is not a decision: anything unclear denies. */
const normalize = (decision: PolicyAnswer): PolicyAnswer => {
  if (decision?.behavior === "ask") return { behavior: "ask" }
  if (decision?.behavior === "allow") {
    return decision.updatedInput !== undefined && typeof decision.updatedInput === "object"
      ? { behavior: "allow", updatedInput: decision.updatedInput }
      : { behavior: "allow" }
  }
  if (decision?.behavior === "deny") {
    return {
      behavior: "deny",
      message: typeof decision.message === "string" ? decision.message : "denied",
      ...(decision.interrupt === true ? { interrupt: true } : {})
    }
  }
  return { behavior: "deny", message: "Permission denied: the policy returned no decision" }
}

/** A permission as data, for reports, `info` and the store (a function is only named). */
export const Described = Schema.Union(PermissionData, Schema.Literal("function"))
export type Described = typeof Described.Type

/** A short label for reports and `info`. */
export const describe = (permission: Policy): Described => typeof permission === "function" ? "function" : permission

/** A permission with `tools` allowed from now on, without asking (an approval given "always"). */
export const allowAlso = (permission: Policy, tools: ReadonlyArray<string>): Policy => {
  if (tools.length === 0 || permission === "full") return permission
  if (typeof permission === "function") {
    return (tool, input) => (tools.includes(tool) ? { behavior: "allow" } : permission(tool, input))
  }
  const { allow, ask } = asData(permission)
  const stillAsked = ask.filter((rule) => !tools.includes(toolOfRule(rule)))
  return { allow: [...new Set([...allow, ...tools])], ...(stillAsked.length === 0 ? {} : { ask: stillAsked }) }
}

/** A decision a human (or another approver) took; `always` allows the tool for the rest of the agent's life. */
export type PendingAnswer = PermissionDecision & { readonly always?: boolean; readonly by?: string }

/** The seam for a decision the policy left open: a human (or another approver) takes it. */
export class PendingDecisions extends Context.Tag("@flotta/core/PendingDecisions")<PendingDecisions, {
  readonly decide: (request: PermissionRequest) => Effect.Effect<PendingAnswer>
  /** The agent's open requests end without a decision (its turn was interrupted, it closed or crashed). */
  readonly expire: (agent: string, reason: string) => Effect.Effect<void>
}>() {
  /** Nobody to ask: a pending decision is a deny that says so (the model sees the message). */
  static readonly none = Layer.succeed(PendingDecisions, {
    decide: (request) =>
      Effect.succeed(deny(request.tool, "needs an approval, and no approver is configured for this fleet")),
    expire: () => Effect.void
  })
}

/** Told when a decision starts and stops waiting on someone else: the agent's status and turn clock follow. */
export type OnWaiting = (waiting: boolean) => Effect.Effect<void>

/** Answers every agent's permission requests from its policy, handing "ask" answers to `PendingDecisions`. */
export class Permission extends Effect.Service<Permission>()("@flotta/core/Permission", {
  effect: Effect.gen(function*() {
    const pending = yield* PendingDecisions
    const decide = Effect.fn("Permission.decide")(function*(
      policy: Policy,
      request: PermissionRequest,
      onWaiting: OnWaiting = () => Effect.void
    ) {
      const given = yield* answer(policy, request.tool, request.input)
      if (given.behavior !== "ask") return given as PendingAnswer
      return yield* onWaiting(true).pipe(
        Effect.zipRight(pending.decide(request)),
        Effect.tap((decision) =>
          Effect.annotateCurrentSpan({
            "flotta.decision": decision.behavior,
            ...(decision.by === undefined ? {} : { "flotta.decided_by": decision.by })
          })
        ),
        Effect.ensuring(onWaiting(false)),
        Effect.withSpan("flotta.approval", {
          attributes: { "flotta.agent": request.agent, "flotta.tool": request.tool }
        })
      )
    })
    return { decide, expire: pending.expire } as const
  })
}) {}
