/**
 * A tool call as data: the call, what it came to (`ToolOutcome`: ok, error, or refused and why, its result's text
 * within a bound), the permission decision on it, and the turn's activity as it streams (`Activity`). A floor of
 * `AgentView`, which re-exports it: the transcript's records hold these.
 */
import { Schema } from "effect"
import { exact } from "./Decode.js"

/**
 * Why a tool call was refused: the tool was not offered to the agent (`not_offered`), its sandbox refused it
 * (`sandbox`), its policy did (`policy`), a human did (`human`, with who and their message), or an approval
 * ran out of time (`expired`, also when the host restarted while it waited).
 */
export const ToolRefusal = Schema.Struct({
  reason: Schema.Literal("not_offered", "sandbox", "policy", "human", "expired"),
  message: Schema.String,
  /** Who decided, for a human: the surface they decided on (`api`, `mcp`, `cli`, `dashboard`, ...). */
  by: exact(Schema.String)
})
export type ToolRefusal = typeof ToolRefusal.Type

/** The bound on a tool result's text in the transcript; `bytes` says the full size. */
export const TOOL_RESULT_MAX_BYTES = 4096

/**
 * What a tool call came to: `ok`, `error` (the tool ran and failed) or `refused` (it never ran: see `refusal`);
 * the result's text as the model saw it, cut to `TOOL_RESULT_MAX_BYTES` (`bytes` is its full size in UTF-8), and
 * how long the call took, from the model's request to its result (a human's wait included).
 */
export const ToolOutcome = Schema.Struct({
  status: Schema.Literal("ok", "error", "refused"),
  text: Schema.String,
  bytes: Schema.Number,
  truncated: Schema.Boolean,
  durationMs: Schema.Number,
  refusal: exact(ToolRefusal)
})
export type ToolOutcome = typeof ToolOutcome.Type

/** What the agent is doing as its turns stream (a tool it calls, text it writes): for progress displays. */
export const Activity = Schema.Union(
  Schema.TaggedStruct("Text", { turnId: Schema.String, text: Schema.String }),
  Schema.TaggedStruct("Tool", { turnId: Schema.String, tool: Schema.String, input: Schema.Unknown }),
  /** A tool call's outcome, as the CLI reported it (the call's id joins it to its `Tool`). */
  Schema.TaggedStruct("ToolResult", {
    turnId: Schema.String,
    tool: Schema.String,
    id: Schema.String,
    outcome: ToolOutcome
  }),
  /** A piece of text as the model writes it (only for an agent with `stream: true`). */
  Schema.TaggedStruct("TextDelta", { turnId: Schema.String, text: Schema.String })
)
export type Activity = typeof Activity.Type

export const ToolCall = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  input: Schema.Unknown,
  /** Its outcome, once the CLI reported it (a call cut short by an interrupt or a crash has none). */
  outcome: exact(ToolOutcome)
})
export type ToolCall = typeof ToolCall.Type

export const PermissionRecord = Schema.Struct({
  /** The tool call it decided (the CLI names it in its request). */
  toolUseId: exact(Schema.String),
  tool: Schema.String,
  input: Schema.Unknown,
  decision: Schema.Literal("allow", "deny"),
  message: exact(Schema.String),
  updatedInput: exact(Schema.Unknown),
  /** Who decided, when it was not the policy: a human's surface (`api`, `mcp`, `cli`, ...), or `timeout`, ... */
  by: exact(Schema.String)
})
export type PermissionRecord = typeof PermissionRecord.Type
