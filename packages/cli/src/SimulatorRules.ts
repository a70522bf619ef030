/**
 * The simulator's rule engine: pure functions from a `/v1/messages` request body to the answer (`decide`), the
 * scripted "model" behind the simulator (`Simulator.ts` serves it over HTTP; `SimulatorWire.ts` encodes its
 * decisions as Messages-API JSON and SSE). The "model" acts on the newest user text, which starts with an
 * upper-case keyword:
 *
 * | prompt                    | answer                                                                   |
 * | ------------------------- | ------------------------------------------------------------------------ |
 * | `ECHO <text>`, or no rule | the text `ECHO: <text>` (a prompt without a keyword is echoed whole)     |
 * | `REMEMBER <fact>`         | `OK, I will remember that.`                                              |
 * | `RECALL`                  | `The fact is: <the last REMEMBER'd fact>`, or `I know no fact.`          |
 * | `READ <path>`             | a Read tool call; on its result `TOOL_RESULT Read: <first 200 chars>`    |
 * | `WRITE <path> <text>`     | a Write tool call; on its result `WROTE <path>` (or `DENIED: <why>`)     |
 * | `BASH <command>`          | a Bash tool call; on its result `BASH_RESULT: <output>` (or `DENIED: …`) |
 * | `BASH_UNSANDBOXED <cmd>`  | the same, asking to leave the sandbox (`dangerouslyDisableSandbox: true`) |
 * | `STRUCTURED <json>`       | a StructuredOutput tool call with that object; on its result `Done.`     |
 * | `STRUCTURED_TEXT`         | plain text where structured output was asked for                         |
 * | `LOOP`                    | a Read of /etc/hostname after every tool result (trips `--max-turns`)    |
 * | `EXPENSIVE`               | a text billed as 2M input + 200k output tokens (trips budgets)           |
 * | `SLOW <ms> [words]`       | `SLOW DONE <words>`, streamed over `<ms>` so interrupts land mid-turn    |
 * | `HANG`                    | `message_start`, then nothing until the client goes away                 |
 * | `ERROR <status>`          | that HTTP error (400..599, else 500) with the API's error JSON           |
 * | `LIMIT <s> <text>`        | 429 with the usage limiter's headers (rejected, reset in `<s>` seconds,  |
 * |                           | claim five_hour); resumed by the fleet's continuation: `RESUMED: <text>` |
 * | `THROTTLE <text>`         | 429, rejected, no claim ("not your usage limit"); resumed: as LIMIT's   |
 * | `NEAR_LIMIT <text>`       | `ECHO: <text>` with the limiter's `allowed_warning` headers (5h at 92%)  |
 * | anything, with a schema   | a StructuredOutput call with a sample of the `--json-schema` schema      |
 *
 * The limiter's headers reach the CLI only with a subscription-style login (`CLAUDE_CODE_OAUTH_TOKEN`, no API key:
 * see `Simulator.offlineLayout`'s `login`); with an API key a LIMIT is a plain 429. After a 429 the CLI keeps the
 * prompt and merges it into the next user message; when that is the fleet's continuation (`Parking.CONTINUATION`),
 * the rules look past it to the kept prompt and answer it as resumed (one request with the limit, never two).
 *
 * Requests the CLI makes on its own (model probes, prompt suggestions, compaction) are "side requests": they
 * get short fixed answers and never reach the rules.
 *
 * The CLI's side of the wire (what it sends, and the environment that keeps it offline) is in CLAUDE-CLI.md. The
 * user's page of these words is docs/guides/simulator.md (a test holds it to the keywords here).
 */
import { CONTINUATION } from "@flotta/core/Parking"
import { Option } from "effect"
import { blocksOf, isObject, type Json, parseJsonObject, textOf, toolResultText } from "./internal/requestJson.js"

export type { Json } from "./internal/requestJson.js"

/** Token counts the fake reports; the CLI prices them at its list price for the request's model id. */
export interface Usage {
  readonly input_tokens: number
  readonly output_tokens: number
}

/** A content block of an answer. */
export type Block =
  | { readonly type: "text"; readonly text: string }
  | { readonly type: "tool_use"; readonly id: string; readonly name: string; readonly input: Json }

/** Response headers of an answer (the usage limiter's, say). */
export type Headers = Readonly<Record<string, string>>

/** What to answer: a message (streamed over `slowMs` if set), an HTTP error, or no answer at all. */
export type Decision =
  | {
    readonly _tag: "message"
    readonly content: ReadonlyArray<Block>
    readonly stopReason: "end_turn" | "tool_use"
    readonly usage: Usage
    readonly slowMs?: number
    readonly headers?: Headers
  }
  | { readonly _tag: "error"; readonly status: number; readonly message?: string; readonly headers?: Headers }
  | { readonly _tag: "hang" }

/** A decision, with the rule that made it and the user text it matched (both recorded per request). */
export interface Ruled {
  readonly rule: string // "ECHO", "READ", "READ:result", "side:probe", "empty", ...
  readonly prompt: string | undefined
  readonly decision: Decision
}

export interface DecideOptions {
  readonly usage: Usage
  /** The id for a tool_use in this answer (there is at most one); it must start with `toolu_fake_`. */
  readonly toolId: string
  /** Now, in epoch milliseconds: the usage limiter's reset times are counted from it (default: the epoch). */
  readonly now?: number
}

export const defaultUsage: Usage = { input_tokens: 100, output_tokens: 20 }
const EXPENSIVE_USAGE: Usage = { input_tokens: 2_000_000, output_tokens: 200_000 }
/** Every tool_use id the simulator makes starts with this; tool_results for other ids are not its own. */
export const TOOL_ID_PREFIX = "toolu_fake_"

// Texts the CLI itself sends as "user" text, and the fleet's continuation after a usage limit; they are not
// prompts, so the engine looks past them.
const CLI_INTERNAL_PREFIXES = ["[structured-output-enforce]", "[Request interrupted", CONTINUATION]

const isOurToolResult = (block: Json) =>
  block.type === "tool_result" && typeof block.tool_use_id === "string" &&
  block.tool_use_id.startsWith(TOOL_ID_PREFIX)

const isInternal = (text: string) => CLI_INTERNAL_PREFIXES.some((p) => text.startsWith(p))

// "KEYWORD rest...": keywords are upper case and must start the text.
const parsePrompt = (prompt: string): { readonly keyword: string; readonly rest: string } => {
  const match = /^([A-Z_]+)(?:\s+([\s\S]*))?$/.exec(prompt)
  return { keyword: match?.[1] ?? "", rest: (match?.[2] ?? "").trim() }
}

// The last `REMEMBER <fact>` in the users' texts: a whole prompt, or a line of a compaction summary (which
// is how a fact survives `/compact`: the compaction answer below writes it back as such a line).
const rememberedFact = (messages: ReadonlyArray<Json>): string | undefined => {
  let fact: string | undefined
  for (const m of messages) {
    if (m.role !== "user") continue
    for (const b of blocksOf(m.content)) {
      const t = textOf(b)
      if (t === undefined) continue
      if (t.startsWith("REMEMBER ")) fact = t.slice("REMEMBER ".length).trim()
      else for (const line of t.matchAll(/^REMEMBER (.+)$/gm)) fact = line[1]!.trim()
    }
  }
  return fact
}

const textAnswer = (text: string, usage: Usage, slowMs?: number): Decision => ({
  _tag: "message",
  content: [{ type: "text", text }],
  stopReason: "end_turn",
  usage,
  ...(slowMs !== undefined ? { slowMs } : {})
})

const toolAnswer = (options: DecideOptions, name: string, input: Json): Decision => ({
  _tag: "message",
  content: [{ type: "tool_use", id: options.toolId, name, input }],
  stopReason: "tool_use",
  usage: options.usage
})

/** A small value that satisfies a JSON Schema: what the scripted model answers when structured output is asked. */
export const sampleOf = (schema: unknown): unknown => {
  if (!isObject(schema)) return null
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return schema.enum[0]
  if ("const" in schema) return schema.const
  for (const key of ["oneOf", "anyOf", "allOf"] as const) {
    const options = schema[key]
    if (Array.isArray(options) && options.length > 0) return sampleOf(options[0])
  }
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type
  switch (type) {
    case "object": {
      const properties = isObject(schema.properties) ? schema.properties : {}
      return Object.fromEntries(Object.entries(properties).map(([key, value]) => [key, sampleOf(value)]))
    }
    case "array":
      return schema.items === undefined ? [] : [sampleOf(schema.items)]
    case "string":
      return "simulated"
    case "number":
    case "integer":
      return typeof schema.minimum === "number" ? schema.minimum : 1
    case "boolean":
      return true
    default:
      return null
  }
}

/** The StructuredOutput tool the CLI offers under `--json-schema`, if this request has it. */
const structuredOutputSchema = (body: Json): unknown => {
  const tools = Array.isArray(body.tools) ? body.tools.filter(isObject) : []
  return tools.find((tool) => tool.name === "StructuredOutput")?.input_schema
}

/** The usage limiter's headers: `rejected` (with the claim, the account's usage limit; without, a throttle). */
export const limitHeaders = (resetAt: number, claim: boolean): Headers => ({
  "anthropic-ratelimit-unified-status": "rejected",
  "anthropic-ratelimit-unified-reset": String(resetAt),
  ...(claim ? { "anthropic-ratelimit-unified-representative-claim": "five_hour" } : {})
})

/** The limiter's `allowed_warning`: the 5-hour window past its 90% threshold, resetting `resetAt` (epoch s). */
export const warningHeaders = (resetAt: number): Headers => ({
  "anthropic-ratelimit-unified-status": "allowed",
  "anthropic-ratelimit-unified-reset": String(resetAt),
  "anthropic-ratelimit-unified-representative-claim": "five_hour",
  "anthropic-ratelimit-unified-5h-utilization": "0.92",
  "anthropic-ratelimit-unified-5h-reset": String(resetAt),
  "anthropic-ratelimit-unified-5h-surpassed-threshold": "0.9"
})

// The rules on a user prompt (trimmed, reminders stripped); `messages` is the whole request history. `resumed`:
// the fleet's continuation follows the prompt (the CLI kept it after a 429).
const onPrompt = (
  prompt: string,
  messages: ReadonlyArray<Json>,
  options: DecideOptions,
  body: Json = {},
  resumed = false
): Ruled => {
  const { keyword, rest } = parsePrompt(prompt)
  const ruled = (rule: string, decision: Decision): Ruled => ({ rule, prompt, decision })
  const text = (answer: string) => textAnswer(answer, options.usage)
  const nowSeconds = Math.floor((options.now ?? 0) / 1000)
  // A 429 with these headers; once the fleet resumes the prompt, the words after the keyword.
  const refused = (rule: string, words: string, message: string, headers: Headers) =>
    resumed
      ? ruled(`${rule}:resumed`, text(`RESUMED: ${words}`.trim()))
      : ruled(rule, { _tag: "error", status: 429, message, headers })
  switch (keyword) {
    case "LIMIT": {
      const [, seconds = "60", words = ""] = /^(\d+)\s*([\s\S]*)$/.exec(rest) ?? [undefined, "60", rest]
      return refused("LIMIT", words, "usage limit reached", limitHeaders(nowSeconds + Number(seconds), true))
    }
    case "THROTTLE":
      return refused("THROTTLE", rest, "Rate limited", limitHeaders(nowSeconds + 60, false))
    case "NEAR_LIMIT":
      return ruled("NEAR_LIMIT", {
        _tag: "message",
        content: [{ type: "text", text: `ECHO: ${rest}` }],
        stopReason: "end_turn",
        usage: options.usage,
        headers: warningHeaders(nowSeconds + 4 * 3600)
      })
    case "REMEMBER":
      return ruled("REMEMBER", text("OK, I will remember that."))
    case "RECALL": {
      const fact = rememberedFact(messages)
      return ruled("RECALL", text(fact === undefined ? "I know no fact." : `The fact is: ${fact}`))
    }
    case "READ":
      return ruled("READ", toolAnswer(options, "Read", { file_path: rest }))
    case "WRITE": {
      const [, file = "", content = ""] = /^(\S+)\s*([\s\S]*)$/.exec(rest) ?? []
      return ruled("WRITE", toolAnswer(options, "Write", { file_path: file, content: `${content}\n` }))
    }
    case "BASH":
      return ruled("BASH", toolAnswer(options, "Bash", { command: rest, description: "run" }))
    case "BASH_UNSANDBOXED":
      return ruled(
        "BASH_UNSANDBOXED",
        toolAnswer(options, "Bash", { command: rest, description: "run", dangerouslyDisableSandbox: true })
      )
    case "STRUCTURED":
      return ruled(
        "STRUCTURED",
        Option.match(parseJsonObject(rest), {
          onNone: () => text(`STRUCTURED needs a JSON object, got: ${rest}`),
          onSome: (input) => toolAnswer(options, "StructuredOutput", input)
        })
      )
    case "STRUCTURED_TEXT":
      return ruled("STRUCTURED_TEXT", text("no structured output here"))
    case "LOOP":
      return ruled("LOOP", toolAnswer(options, "Read", { file_path: "/etc/hostname" }))
    case "EXPENSIVE":
      return ruled("EXPENSIVE", textAnswer("That was expensive.", EXPENSIVE_USAGE))
    case "SLOW": {
      const [, ms = "1000", words = ""] = /^(\d+)\s*([\s\S]*)$/.exec(rest) ?? []
      return ruled("SLOW", textAnswer(`SLOW DONE ${words}`.trim(), options.usage, Number(ms)))
    }
    case "HANG":
      return ruled("HANG", { _tag: "hang" })
    case "ERROR": {
      const status = Number.parseInt(rest, 10)
      return ruled("ERROR", { _tag: "error", status: status >= 400 && status <= 599 ? status : 500 })
    }
    case "ECHO":
      return ruled("ECHO", text(`ECHO: ${rest}`))
    default: {
      // A plain prompt where structured output is asked for gets a sample of the schema, so that
      // `flotta run --simulate --json-schema ...` shows the whole path with any prompt.
      const schema = structuredOutputSchema(body)
      return schema === undefined
        ? ruled("ECHO", text(`ECHO: ${prompt}`))
        : ruled("SAMPLE", toolAnswer(options, "StructuredOutput", sampleOf(schema) as Json))
    }
  }
}

// The newest prompt text in the user messages before index `before`, skipping CLI-internal texts: the
// prompt that started the current tool round trip.
const originPrompt = (messages: ReadonlyArray<Json>, before: number): string | undefined => {
  for (let i = before - 1; i >= 0; i--) {
    const m = messages[i]!
    if (m.role !== "user") continue
    const blocks = blocksOf(m.content)
    for (let j = blocks.length - 1; j >= 0; j--) {
      const t = textOf(blocks[j]!)
      if (t !== undefined && !isInternal(t)) return t
    }
  }
  return undefined
}

// The answer to a tool_result for one of our tool_uses (the second request of a tool turn). The rule is
// the tool's rule with ":result" (READ:result, WRITE:result, ...); a LOOP prompt calls the tool again.
const onToolResult = (
  result: Json,
  messages: ReadonlyArray<Json>,
  lastUser: number,
  options: DecideOptions
): Ruled => {
  const origin = originPrompt(messages, lastUser)
  if (origin !== undefined && parsePrompt(origin).keyword === "LOOP") {
    return { rule: "LOOP", prompt: origin, decision: toolAnswer(options, "Read", { file_path: "/etc/hostname" }) }
  }
  let call: Json | undefined
  for (const m of messages) {
    if (m.role !== "assistant") continue
    for (const b of blocksOf(m.content)) if (b.type === "tool_use" && b.id === result.tool_use_id) call = b
  }
  const name = typeof call?.name === "string" ? call.name : "unknown"
  const input = isObject(call?.input) ? call.input : {}
  const output = toolResultText(result)
  const denied = result.is_error === true // a permission denial, or the tool failed
  const ruled = (rule: string, answer: string): Ruled => ({
    rule: `${rule}:result`,
    prompt: origin,
    decision: textAnswer(answer, options.usage)
  })
  switch (name) {
    case "Read":
      return ruled("READ", `TOOL_RESULT Read: ${output.slice(0, 200)}`)
    case "Write":
      return ruled("WRITE", denied ? `DENIED: ${output}` : `WROTE ${String(input.file_path)}`)
    case "Bash":
      return ruled("BASH", denied ? `DENIED: ${output}` : `BASH_RESULT: ${output.slice(0, 200)}`)
    case "StructuredOutput":
      return ruled("STRUCTURED", denied ? `DENIED: ${output}` : "Done.")
    default:
      return ruled("TOOL", `TOOL_RESULT ${name}: ${output.slice(0, 200)}`)
  }
}

// Requests that are not a user's turn get a short text and never reach the rules: model/quota probes
// (max_tokens 1), prompt suggestions, and compaction (answered with a summary that keeps the facts).
const sideRequest = (
  body: Json,
  messages: ReadonlyArray<Json>,
  newest: string | undefined,
  options: DecideOptions
): Ruled | undefined => {
  const side = (rule: string, answer: string): Ruled => ({
    rule: `side:${rule}`,
    prompt: newest,
    decision: textAnswer(answer, options.usage)
  })
  if (typeof body.max_tokens === "number" && body.max_tokens <= 1) return side("probe", "OK")
  if (newest === undefined) return undefined
  if (newest.startsWith("[SUGGESTION MODE")) return side("suggestion", "ECHO suggested")
  if (newest.startsWith("CRITICAL: Respond with TEXT ONLY") && newest.includes("<summary>")) {
    const fact = rememberedFact(messages.slice(0, -1))
    const facts = fact === undefined ? "" : `REMEMBER ${fact}\n`
    return side("compact", `<analysis>fake</analysis>\n<summary>\n${facts}</summary>`)
  }
  return undefined
}

/**
 * The answer to one `/v1/messages` request body. The request's last message is usually the CLI's
 * `role:"system"` notes, so the engine finds the last user message and, in it, the newest text block
 * (queued sends arrive merged as several blocks). In order:
 * 1. side requests (probes, suggestions, compaction);
 * 2. a prompt newer than any tool_result of ours in that message (after an interrupt the CLI merges the
 *    new prompt into the tool_result message): the prompt rules;
 * 3. a tool_result of ours: the tool's follow-up answer;
 * 4. only CLI-internal text (e.g. a structured-output nudge): the earlier prompt's rules again.
 */
export const decide = (body: Json, options: DecideOptions): Ruled => {
  const messages = Array.isArray(body.messages) ? body.messages.filter(isObject) : []
  let lastUser = messages.length - 1
  while (lastUser >= 0 && messages[lastUser]!.role !== "user") lastUser--
  const blocks = lastUser < 0 ? [] : blocksOf(messages[lastUser]!.content)
  let resultAt = blocks.length - 1
  while (resultAt >= 0 && !isOurToolResult(blocks[resultAt]!)) resultAt--
  let newest: string | undefined
  let resumed = false
  for (let j = blocks.length - 1; j > resultAt && newest === undefined; j--) {
    const t = textOf(blocks[j]!)
    if (t !== undefined && !isInternal(t)) newest = t
    else if (t?.startsWith(CONTINUATION) === true) resumed = true
  }
  const side = sideRequest(body, messages, newest, options)
  if (side !== undefined) return side
  if (newest !== undefined) return onPrompt(newest, messages, options, body, resumed)
  if (resultAt >= 0) return onToolResult(blocks[resultAt]!, messages, lastUser, options)
  const origin = originPrompt(messages, lastUser + 1)
  return origin === undefined
    ? { rule: "empty", prompt: undefined, decision: textAnswer("ECHO: ", options.usage) }
    : onPrompt(origin, messages, options, body, resumed)
}
