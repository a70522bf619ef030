/**
 * Reading the Messages-API request JSON the `claude` CLI sends to the simulator: plain objects, content blocks
 * (a bare string counts as one text block), texts without the CLI's `<system-reminder>` notes, and the text a
 * tool_result carries. Private to the simulator's modules.
 */
import { Option } from "effect"

/** A JSON object, as parsed. */
export type Json = Readonly<Record<string, unknown>>

export const isObject = (u: unknown): u is Json => typeof u === "object" && u !== null && !Array.isArray(u)

// The CLI wraps environment notes in <system-reminder> blocks, inside or next to the user's text.
const stripReminders = (text: string): string =>
  text.replace(/<system-reminder>[\s\S]*?(<\/system-reminder>|$)/g, "").trim()

/** A message's content as blocks: the API allows a bare string for one text block. */
export const blocksOf = (content: unknown): ReadonlyArray<Json> =>
  typeof content === "string"
    ? [{ type: "text", text: content }]
    : Array.isArray(content)
    ? content.filter(isObject)
    : []

/** The text of a text block without reminders, or undefined when nothing is left. */
export const textOf = (block: Json): string | undefined => {
  if (block.type !== "text" || typeof block.text !== "string") return undefined
  const text = stripReminders(block.text)
  return text === "" ? undefined : text
}

/** The text a tool_result carries: a string, or text blocks. */
export const toolResultText = (block: Json): string =>
  typeof block.content === "string"
    ? block.content
    : blocksOf(block.content).map((b) => typeof b.text === "string" ? b.text : "").join("")

/** The text as a JSON object, if it is one. */
export const parseJsonObject = (text: string): Option.Option<Json> =>
  Option.liftThrowable((s: string): unknown => JSON.parse(s))(text).pipe(Option.filter(isObject))
