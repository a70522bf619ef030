/**
 * Permission as data. One policy decides two things: the CLI flags a child starts with (which tools the model
 * is offered and which need no prompt), and the answer to every `can_use_tool` request the child sends.
 * Both are needed: flags alone leave tools that never prompt, and answers alone let the model see tools it
 * may not use. The `Permission` service answers requests; a decision the policy leaves to someone else
 * (`{ behavior: "ask" }`) goes to the `PendingDecisions` seam, where approvals plug in.
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

/** An agent's permission: `"read_only"`, `"full"`, `{ allow: [tools] }`, or a function. */
export type Policy = "read_only" | "full" | { readonly allow: ReadonlyArray<string> } | PermissionFunction

/** One `can_use_tool` request, with who asked. */
export interface PermissionRequest {
  readonly agent: string
  /** The turn in flight, when there is one. */
  readonly turnId: string | null
  readonly tool: string
  readonly input: Record<string, unknown>
  readonly toolUseId?: string
}

/** The data forms, as they appear in config files. */
export const PermissionData = Schema.Union(
  Schema.Literal("read_only", "full"),
  Schema.Struct({ allow: Schema.Array(Schema.String.pipe(Schema.minLength(1))) })
)
export type PermissionData = typeof PermissionData.Type

/** `Bash(git *)` → `Bash`: the tool a rule is about. */
const toolOfRule = (rule: string): string => {
  const paren = rule.indexOf("(")
  return paren === -1 ? rule : rule.slice(0, paren)
}

/** The CLI flags for a permission. `--tools` restricts what the model is offered at all. */
export const flags = (permission: Policy): ReadonlyArray<string> => {
  if (typeof permission === "function" || permission === "full") return []
  const allowed = permission === "read_only" ? READ_ONLY_TOOLS : permission.allow
  const tools = [...new Set(allowed.map(toolOfRule))]
  return ["--tools", tools.join(","), "--allowedTools", allowed.join(",")]
}

/** Whether a permission lets the agent change files or run commands (a session may not, in config). */
export const canWrite = (permission: Policy): boolean => {
  if (typeof permission === "function" || permission === "full") return true
  if (permission === "read_only") return false
  return permission.allow.some((rule) => !READ_ONLY_TOOLS.includes(toolOfRule(rule)))
}

const deny = (tool: string, why: string): PermissionDecision => ({
  behavior: "deny",
  message: `Permission denied by flotta: ${tool} ${why}`
})

/** The policy's own answer to one request. A policy function that throws or rejects denies. */
export const answer = (
  permission: Policy,
  tool: string,
  input: Record<string, unknown>
): Effect.Effect<PolicyAnswer> => {
  if (permission === "full") return Effect.succeed({ behavior: "allow" })
  if (permission === "read_only") {
    return Effect.succeed(
      READ_ONLY_TOOLS.includes(tool) ? { behavior: "allow" } : deny(tool, "is not allowed for a read-only agent")
    )
  }
  if (typeof permission !== "function") {
    // A scoped rule such as `Bash(git *)` is enforced by the CLI itself; what it still asks about is outside it.
    return Effect.succeed(
      permission.allow.includes(tool)
        ? { behavior: "allow" }
        : deny(tool, `is not in this agent's allow list (${permission.allow.join(", ")})`)
    )
  }
  return Effect.suspend(() => {
    const answer = permission(tool, input)
    if (Effect.isEffect(answer)) return answer
    if (answer instanceof Promise) return Effect.promise(() => answer)
    return Effect.succeed(answer)
  }).pipe(
    Effect.map(normalize),
    Effect.catchAllCause((cause) => Effect.succeed(deny(tool, `was refused: the permission policy failed (${cause})`)))
  )
}

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

/** A short label for reports and `info`. */
export const describe = (permission: Policy): string | { readonly allow: ReadonlyArray<string> } =>
  typeof permission === "function" ? "function" : permission

/** The seam for a decision the policy left open: a human (or another approver) takes it. */
export class PendingDecisions extends Context.Tag("@flotta/core/PendingDecisions")<PendingDecisions, {
  readonly decide: (request: PermissionRequest) => Effect.Effect<PermissionDecision>
}>() {
  /** Nobody to ask: a pending decision is a deny that says so (the model sees the message). */
  static readonly none = Layer.succeed(PendingDecisions, {
    decide: (request) =>
      Effect.succeed(deny(request.tool, "needs an approval, and no approver is configured for this fleet"))
  })
}

/** Answers every agent's permission requests from its policy, handing "ask" answers to `PendingDecisions`. */
export class Permission extends Effect.Service<Permission>()("@flotta/core/Permission", {
  effect: Effect.gen(function*() {
    const pending = yield* PendingDecisions
    const decide = Effect.fn("Permission.decide")(function*(policy: Policy, request: PermissionRequest) {
      const given = yield* answer(policy, request.tool, request.input)
      return given.behavior === "ask" ? yield* pending.decide(request) : given
    })
    return { decide } as const
  })
}) {}
