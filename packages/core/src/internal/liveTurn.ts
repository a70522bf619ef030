/**
 * A turn as it happens: the model's text and tool calls as its messages come, each call's outcome as the CLI
 * reports it, and (for an agent with `stream: true`) its words as it writes them. Each goes into the transcript
 * record, to the agent's `onActivity`, and to the report log's subscribers as it comes (`tool_call`,
 * `tool_result`, `assistant_text`; `text_delta` is told live and never kept), not only when the turn ends.
 *
 * A text is told in the log once something follows it: a text the turn's `result` carries (a plain answer) is
 * not told twice, and the CLI writes each block of a message as a frame of its own, so the wait is a block's.
 */
import type { ToolOutcome } from "../AgentView.js"
import * as Protocol from "../ClaudeProtocol.js"
import type { Active, AgentContext } from "./agentState.js"
import { outcomeOf } from "./toolOutcome.js"
import { preview } from "./turnRecord.js"

/** The most of a tool call's input a report entry carries as data; past it, a preview of its JSON. */
const INPUT_MAX = 2048
/** The most of a text a report entry carries. */
const TEXT_MAX = 2000

const inputView = (input: unknown) => {
  const json = JSON.stringify(input) ?? "null"
  return json.length <= INPUT_MAX ? input : preview(json, INPUT_MAX)
}

/** An assistant message: its text and tool calls recorded and told; a tool call is saved before its result. */
export const observe = (ctx: AgentContext, active: Active, frame: Protocol.AssistantFrame, now: number) => {
  const turn = active.turn
  const onActivity = ctx.options.onActivity
  // The newest message is where a fork at this turn would cut.
  if (frame.uuid !== undefined) turn.record.messageId = frame.uuid
  let called = false
  for (const block of frame.message.content) {
    if (block.type === "tool_use" && block.name !== undefined) {
      tellText(ctx, active, now)
      const id = block.id ?? ""
      const input = block.input ?? {}
      turn.record.toolCalls.push({ id, name: block.name, input })
      active.toolStarts.set(id, now)
      onActivity?.({ _tag: "Tool", turnId: turn.id, tool: block.name, input })
      ctx.reports.unsafePost(ctx.name, "tool_call", { id, tool: block.name, input: inputView(input) }, turn.id, now)
      called = true
    } else if (block.type === "text" && block.text !== undefined && block.text.length > 0) {
      onActivity?.({ _tag: "Text", turnId: turn.id, text: block.text })
      tellText(ctx, active, now)
      active.pendingText = block.text
    }
  }
  // A tool call may act on the world: the record says so before its result comes.
  if (called) ctx.saveTurn(turn)
}

/** Tells the model's text that waited for what follows it. */
const tellText = (ctx: AgentContext, active: Active, now: number) => {
  const text = active.pendingText
  if (text === null) return
  active.pendingText = null
  ctx.reports.unsafePost(ctx.name, "assistant_text", { text: preview(text, TEXT_MAX) }, active.turn.id, now)
}

/** The turn's result came: a text that waited is told unless the result carries it. */
export const ended = (ctx: AgentContext, active: Active, result: Protocol.ResultFrame, now: number) => {
  if (active.pendingText === Protocol.resultText(result)) active.pendingText = null
  tellText(ctx, active, now)
}

/** The CLI's results of tool calls: each call's outcome on its record, told, and saved. */
export const toolResults = (
  ctx: AgentContext,
  active: Active,
  frame: Protocol.UserToolResultsFrame,
  now: number
) => {
  const turn = active.turn
  tellText(ctx, active, now)
  let changed = false
  for (const block of frame.message.content) {
    const index = turn.record.toolCalls.findIndex((call) => call.id === block.tool_use_id)
    if (index === -1) continue // a subagent's call, or one from before a restart: not this turn's
    const call = turn.record.toolCalls[index]!
    const startedAt = active.toolStarts.get(call.id) ?? now
    active.toolStarts.delete(call.id)
    const outcome = outcomeOf(block, turn.record.permissions, Math.max(0, now - startedAt))
    turn.record.toolCalls[index] = { ...call, outcome }
    changed = true
    ctx.options.onActivity?.({ _tag: "ToolResult", turnId: turn.id, tool: call.name, id: call.id, outcome })
    ctx.reports.unsafePost(ctx.name, "tool_result", reportOf(call.id, call.name, outcome), turn.id, now)
  }
  if (changed) ctx.saveTurn(turn)
}

/** A tool outcome as a report entry shows it: its text shortened (the transcript keeps its bounded whole). */
const reportOf = (id: string, tool: string, outcome: ToolOutcome) => ({
  id,
  tool,
  status: outcome.status,
  text: preview(outcome.text, 500),
  bytes: outcome.bytes,
  durationMs: outcome.durationMs,
  ...(outcome.refusal === undefined ? {} : { refusal: outcome.refusal })
})

/** A piece of the model's text as it writes it: told live, never kept (the whole message is, when it comes). */
export const textDelta = (ctx: AgentContext, active: Active, frame: Protocol.TextDeltaFrame, now: number) => {
  const text = frame.event.delta.text
  ctx.options.onActivity?.({ _tag: "TextDelta", turnId: active.turn.id, text })
  ctx.reports.unsafeFlash(ctx.name, "text_delta", { text }, active.turn.id, now)
}
