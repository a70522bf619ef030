/**
 * Permission as data. One value decides two things: the CLI flags a child starts with (which tools the model
 * is offered and which need no prompt), and the answer to every `can_use_tool` request the child sends.
 * Both are needed: flags alone leave tools that never prompt, and answers alone let the model see tools it
 * may not use.
 */
import { Effect, Schema } from "effect"

/** Tools that can only read. Glob and Grep are absent from CLI 2.1.332 but come back in other versions. */
export const READ_ONLY_TOOLS: ReadonlyArray<string> = ["Read", "Glob", "Grep"]

export type PermissionDecision =
  | { readonly behavior: "allow"; readonly updatedInput?: Record<string, unknown> }
  | { readonly behavior: "deny"; readonly message: string; readonly interrupt?: boolean }

/** A policy in code: may answer synchronously, with a Promise, or with an Effect. */
export type PermissionFunction = (
  tool: string,
  input: Record<string, unknown>
) => PermissionDecision | Promise<PermissionDecision> | Effect.Effect<PermissionDecision>

export type Permission = "read_only" | "full" | { readonly allow: ReadonlyArray<string> } | PermissionFunction

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
export const flags = (permission: Permission): ReadonlyArray<string> => {
  if (typeof permission === "function" || permission === "full") return []
  const allowed = permission === "read_only" ? READ_ONLY_TOOLS : permission.allow
  const tools = [...new Set(allowed.map(toolOfRule))]
  return ["--tools", tools.join(","), "--allowedTools", allowed.join(",")]
}

/** Whether a permission lets the agent change files or run commands (a session may not, in config). */
export const canWrite = (permission: Permission): boolean => {
  if (typeof permission === "function" || permission === "full") return true
  if (permission === "read_only") return false
  return permission.allow.some((rule) => !READ_ONLY_TOOLS.includes(toolOfRule(rule)))
}

const deny = (tool: string, why: string): PermissionDecision => ({
  behavior: "deny",
  message: `Permission denied by flotta: ${tool} ${why}`
})

/** The answer to one `can_use_tool` request. A policy function that throws or rejects denies. */
export const decide = (
  permission: Permission,
  tool: string,
  input: Record<string, unknown>
): Effect.Effect<PermissionDecision> => {
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
const normalize = (decision: PermissionDecision): PermissionDecision => {
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
export const describe = (permission: Permission): string | { readonly allow: ReadonlyArray<string> } =>
  typeof permission === "function" ? "function" : permission
