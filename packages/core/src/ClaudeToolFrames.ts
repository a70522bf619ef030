/**
 * The frames that say what happens inside a turn between the model's messages: the `user` frame the CLI writes
 * with each tool call's result (`tool_result` blocks: the call's id, what the model is told, whether it failed),
 * and, with `--include-partial-messages`, the `stream_event` frames whose text deltas are the model's words as it
 * writes them. Decoded by hand like the other turn frames (`ClaudeFrames`), held to these Schemas by the test on
 * the real CLI's captured frames; `ClaudeProtocol` re-exports them.
 */
import { Option, Schema } from "effect"

/** A piece of a tool result's content: text, or something else (an image) named by its type. */
export const ToolResultPart = Schema.Struct({ type: Schema.String, text: Schema.optional(Schema.String) })
export type ToolResultPart = typeof ToolResultPart.Type

export const ToolResultBlock = Schema.Struct({
  type: Schema.Literal("tool_result"),
  tool_use_id: Schema.String,
  /** What the model is told: a string, or parts. */
  content: Schema.optional(Schema.Union(Schema.String, Schema.Array(ToolResultPart))),
  is_error: Schema.optional(Schema.Boolean)
})
export type ToolResultBlock = typeof ToolResultBlock.Type

/** A `user` frame the CLI writes during a turn, reduced to its tool results (other blocks are left out). */
export const UserToolResultsFrame = Schema.Struct({
  type: Schema.Literal("user"),
  message: Schema.Struct({ content: Schema.Array(ToolResultBlock) })
})
export type UserToolResultsFrame = typeof UserToolResultsFrame.Type

/** A `stream_event` frame's text delta: a piece of the model's text as it writes it. */
export const TextDeltaFrame = Schema.Struct({
  type: Schema.Literal("stream_event"),
  event: Schema.Struct({
    type: Schema.Literal("content_block_delta"),
    delta: Schema.Struct({ type: Schema.Literal("text_delta"), text: Schema.String })
  })
})
export type TextDeltaFrame = typeof TextDeltaFrame.Type

type Json = Record<string, unknown>
const isRecord = (u: unknown): u is Json => typeof u === "object" && u !== null && !Array.isArray(u)
const isString = (u: unknown): u is string => typeof u === "string"

const decodePart = (u: unknown): ToolResultPart | undefined => {
  if (!isRecord(u) || !isString(u["type"])) return undefined
  const text = u["text"]
  if (text !== undefined && !isString(text)) return undefined
  return text === undefined ? { type: u["type"] } : { type: u["type"], text }
}

const decodeToolResult = (u: Json): ToolResultBlock | undefined => {
  const id = u["tool_use_id"]
  const { content, is_error: isError } = u
  if (!isString(id) || (isError !== undefined && typeof isError !== "boolean")) return undefined
  const block: { -readonly [K in keyof ToolResultBlock]: ToolResultBlock[K] } = {
    type: "tool_result",
    tool_use_id: id
  }
  if (isError !== undefined) block.is_error = isError
  if (isString(content)) block.content = content
  else if (Array.isArray(content)) {
    const parts: Array<ToolResultPart> = []
    for (const raw of content) {
      const part = decodePart(raw)
      if (part === undefined) return undefined
      parts.push(part)
    }
    block.content = parts
  } else if (content !== undefined) return undefined
  return block
}

/**
 * A `user` frame's tool results, by hand; None when it carries none (the CLI's replay of a prompt, say), or a
 * tool result that does not match.
 */
export const decodeUserToolResultsFrame = (json: Json): Option.Option<UserToolResultsFrame> => {
  const message = json["message"]
  if (!isRecord(message) || !Array.isArray(message["content"])) return Option.none()
  const content: Array<ToolResultBlock> = []
  for (const raw of message["content"]) {
    if (!isRecord(raw) || raw["type"] !== "tool_result") continue
    const block = decodeToolResult(raw)
    if (block === undefined) return Option.none()
    content.push(block)
  }
  return content.length === 0 ? Option.none() : Option.some({ type: "user", message: { content } })
}

/** A `stream_event` frame's text delta, by hand; None for every other event (message starts, tool input, ...). */
export const decodeTextDeltaFrame = (json: Json): Option.Option<TextDeltaFrame> => {
  const event = json["event"]
  if (!isRecord(event) || event["type"] !== "content_block_delta") return Option.none()
  const delta = event["delta"]
  if (!isRecord(delta) || delta["type"] !== "text_delta" || !isString(delta["text"])) return Option.none()
  return Option.some({
    type: "stream_event",
    event: { type: "content_block_delta", delta: { type: "text_delta", text: delta["text"] } }
  })
}

/** What the model is told of a tool result, as text: its text parts, and other parts named (`[image]`). */
export const toolResultText = (block: ToolResultBlock): string =>
  block.content === undefined
    ? ""
    : isString(block.content)
    ? block.content
    : block.content.map((part) => part.text ?? `[${part.type}]`).join("\n")
