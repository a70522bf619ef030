/**
 * An agent's answers to its process's permission requests (`can_use_tool`): its sandbox refuses first, then its
 * policy decides, or a human does (`Permission`'s pending decisions) while the turn's clock stops. Each decision
 * is recorded in the turn in flight, and an approval given "always" widens the agent's permission for the rest
 * of its life.
 */
import { Effect, Option, Predicate } from "effect"
import type { PermissionRecord } from "../AgentView.js"
import type { ControlHandler } from "../ClaudeProcess.js"
import * as Protocol from "../ClaudeProtocol.js"
import * as Permission from "../Permission.js"
import * as Sandbox from "../Sandbox.js"
import type { AgentContext, AgentDeps } from "./agentState.js"
import * as Turn from "./turn.js"

/** The handler of one agent's control requests: it answers `can_use_tool`, and no other subtype. */
export const controlHandler = (ctx: AgentContext, deps: AgentDeps): ControlHandler => {
  const { name, state } = ctx

  /** An approval given "always": the tool is in the agent's permission from now on (stored, and reported). */
  const allowAlways = (tool: string, by: string) =>
    Effect.suspend(() => {
      state.policy = Permission.allowAlso(state.policy, [tool])
      ctx.saveAgent()
      return ctx.reports.post(name, "permission_changed", {
        allowAlso: tool,
        by,
        permission: Permission.describe(state.policy)
      })
    })

  /** While a human decides, the agent waits for approval and its turn's clock stops. */
  const waitingFor = (): Permission.OnWaiting => {
    let release: ((now: number) => void) | undefined
    return (waiting) =>
      Effect.clockWith((clock) =>
        Effect.sync(() => {
          const now = clock.unsafeCurrentTimeMillis()
          if (waiting) {
            state.waitingApprovals++
            release = ctx.active === undefined ? undefined : Turn.hold(ctx, ctx.active, now)
          } else {
            state.waitingApprovals--
            release?.(now)
          }
        })
      )
  }

  return (request) => {
    const ask = Protocol.decodeCanUseTool(request)
    if (Option.isNone(ask)) {
      return Effect.succeed({ _tag: "Error", error: `flotta does not handle ${request.subtype} requests` })
    }
    const { input: rawInput, tool_name: tool, tool_use_id: toolUseId } = ask.value
    const input: Record<string, unknown> = Predicate.isRecord(rawInput) ? rawInput : {}
    const turnId = ctx.active?.turn.id ?? null
    // The decision (and a human's wait for it) is part of the turn in flight: its span nests under the turn's.
    const turnSpan = ctx.active?.span
    // The sandbox refuses first: what it does not allow never reaches the policy, nor a human.
    const refused = ctx.sandbox === null ? undefined : Sandbox.refusal(ctx.sandbox, tool, input)
    const decided: Effect.Effect<Permission.PendingAnswer> = refused !== undefined
      ? Effect.succeed({ behavior: "deny", message: refused, by: "sandbox" })
      : deps.permission.decide(state.policy, {
        agent: name,
        turnId,
        tool,
        input,
        ...(toolUseId === undefined ? {} : { toolUseId })
      }, waitingFor())
    return decided.pipe(
      (decided) => (turnSpan === undefined ? decided : Effect.withParentSpan(decided, turnSpan)),
      Effect.tap((decision) =>
        decision.behavior === "allow" && decision.always === true
          ? allowAlways(tool, decision.by ?? "api")
          : Effect.void
      ),
      Effect.tap((decision) =>
        recordPermission(ctx, {
          ...(toolUseId === undefined ? {} : { toolUseId }),
          tool,
          input,
          ...(decision.behavior === "allow"
            ? { decision: "allow", ...(decision.updatedInput ? { updatedInput: decision.updatedInput } : {}) }
            : { decision: "deny", message: decision.message }),
          ...(decision.by === undefined ? {} : { by: decision.by })
        })
      ),
      Effect.map((decision) => ({
        _tag: "Success" as const,
        // The CLI takes `updatedInput` as the input to run; echo the original when the policy kept it.
        response: decision.behavior === "allow"
          ? { behavior: "allow", updatedInput: decision.updatedInput ?? input }
          : {
            behavior: "deny",
            message: decision.message,
            ...(decision.interrupt === true ? { interrupt: true } : {})
          }
      }))
    )
  }
}

/** Records a permission decision in the turn in flight (the transcript) and the report log. */
export const recordPermission = Effect.fnUntraced(function*(ctx: AgentContext, record: PermissionRecord) {
  return yield* Effect.clockWith((clock) =>
    Effect.sync(() => {
      const turn = ctx.active?.turn
      turn?.record.permissions.push(record)
      if (turn !== undefined) ctx.saveTurn(turn)
      ctx.reports.unsafePost(ctx.name, "permission", record, turn?.id, clock.unsafeCurrentTimeMillis())
    })
  )
})
