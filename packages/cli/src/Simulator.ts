/**
 * The simulator: a built-in scripted model behind a local fake of the Anthropic Messages API, so the real
 * `claude` CLI runs end to end with no account, no network and no spend (`flotta run --simulate`, and every
 * integration test that drives the real CLI). It has two halves:
 *
 * 1. The rule engine (`decide`): pure functions from a request's JSON to the answer. The "model" acts on the
 *    newest user text, which starts with an upper-case keyword:
 *
 *    | prompt                    | answer                                                                   |
 *    | ------------------------- | ------------------------------------------------------------------------ |
 *    | `ECHO <text>`, or no rule | the text `ECHO: <text>` (a prompt without a keyword is echoed whole)     |
 *    | `REMEMBER <fact>`         | `OK, I will remember that.`                                              |
 *    | `RECALL`                  | `The fact is: <the last REMEMBER'd fact>`, or `I know no fact.`          |
 *    | `READ <path>`             | a Read tool call; on its result `TOOL_RESULT Read: <first 200 chars>`    |
 *    | `WRITE <path> <text>`     | a Write tool call; on its result `WROTE <path>` (or `DENIED: <why>`)     |
 *    | `BASH <command>`          | a Bash tool call; on its result `BASH_RESULT: <output>` (or `DENIED: …`) |
 *    | `STRUCTURED <json>`       | a StructuredOutput tool call with that object; on its result `Done.`     |
 *    | `STRUCTURED_TEXT`         | plain text where structured output was asked for                         |
 *    | `LOOP`                    | a Read of /etc/hostname after every tool result (trips `--max-turns`)    |
 *    | `EXPENSIVE`               | a text billed as 2M input + 200k output tokens (trips budgets)           |
 *    | `SLOW <ms> [words]`       | `SLOW DONE <words>`, streamed over `<ms>` so interrupts land mid-turn    |
 *    | `HANG`                    | `message_start`, then nothing until the client goes away                 |
 *    | `ERROR <status>`          | that HTTP error (400..599, else 500) with the API's error JSON           |
 *    | anything, with a schema   | a StructuredOutput call with a sample of the `--json-schema` schema      |
 *
 *    Requests the CLI makes on its own (model probes, prompt suggestions, compaction) are "side requests":
 *    they get short fixed answers and never reach the rules.
 *
 * 2. The server (`start`, `layer`): `POST /v1/messages` (any query string) on 127.0.0.1, answering with the
 *    SSE event stream when the request says `stream: true` and with one JSON message otherwise; anything
 *    else is a 404 error JSON. Every request is recorded with the rule that answered it.
 *
 * The CLI's side of the wire (what it sends, and the environment that keeps it offline) is in CLAUDE-CLI.md.
 */
import {
  FileSystem,
  Headers,
  HttpIncomingMessage,
  HttpRouter,
  HttpServerRequest,
  HttpServerResponse
} from "@effect/platform"
import { NodeHttpServer } from "@effect/platform-node"
import { Array as Arr, Clock, Context, Duration, Effect, Layer, Option, Ref, Stream } from "effect"
import * as Http from "node:http"
import * as path from "node:path"

// ---------------------------------------------------------------------------------------------------------
// The rule engine
// ---------------------------------------------------------------------------------------------------------

/** Token counts the fake reports; the CLI prices them at its list price for the request's model id. */
export interface Usage {
  readonly input_tokens: number
  readonly output_tokens: number
}

export type Json = Readonly<Record<string, unknown>>

/** A content block of an answer. */
export type Block =
  | { readonly type: "text"; readonly text: string }
  | { readonly type: "tool_use"; readonly id: string; readonly name: string; readonly input: Json }

/** What to answer: a message (streamed over `slowMs` if set), an HTTP error, or no answer at all. */
export type Decision =
  | {
    readonly _tag: "message"
    readonly content: ReadonlyArray<Block>
    readonly stopReason: "end_turn" | "tool_use"
    readonly usage: Usage
    readonly slowMs?: number
  }
  | { readonly _tag: "error"; readonly status: number }
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
}

export const defaultUsage: Usage = { input_tokens: 100, output_tokens: 20 }
const EXPENSIVE_USAGE: Usage = { input_tokens: 2_000_000, output_tokens: 200_000 }
const TOOL_ID_PREFIX = "toolu_fake_"

// Texts the CLI itself sends as "user" text; they are not prompts, so the engine looks past them.
const CLI_INTERNAL_PREFIXES = ["[structured-output-enforce]", "[Request interrupted"]

const isObject = (u: unknown): u is Json => typeof u === "object" && u !== null && !Array.isArray(u)

// The CLI wraps environment notes in <system-reminder> blocks, inside or next to the user's text.
const stripReminders = (text: string): string =>
  text.replace(/<system-reminder>[\s\S]*?(<\/system-reminder>|$)/g, "").trim()

// A message's content as blocks: the API allows a bare string for one text block.
const blocksOf = (content: unknown): ReadonlyArray<Json> =>
  typeof content === "string"
    ? [{ type: "text", text: content }]
    : Array.isArray(content)
    ? content.filter(isObject)
    : []

// The text of a text block without reminders, or undefined when nothing is left.
const textOf = (block: Json): string | undefined => {
  if (block.type !== "text" || typeof block.text !== "string") return undefined
  const text = stripReminders(block.text)
  return text === "" ? undefined : text
}

const isOurToolResult = (block: Json) =>
  block.type === "tool_result" && typeof block.tool_use_id === "string" &&
  block.tool_use_id.startsWith(TOOL_ID_PREFIX)

const isInternal = (text: string) => CLI_INTERNAL_PREFIXES.some((p) => text.startsWith(p))

// The text a tool_result carries: a string, or text blocks.
const toolResultText = (block: Json): string =>
  typeof block.content === "string"
    ? block.content
    : blocksOf(block.content).map((b) => typeof b.text === "string" ? b.text : "").join("")

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

const parseJsonObject = (text: string): Option.Option<Json> =>
  Option.liftThrowable((s: string): unknown => JSON.parse(s))(text).pipe(Option.filter(isObject))

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

// The rules on a user prompt (trimmed, reminders stripped); `messages` is the whole request history.
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

const onPrompt = (prompt: string, messages: ReadonlyArray<Json>, options: DecideOptions, body: Json = {}): Ruled => {
  const { keyword, rest } = parsePrompt(prompt)
  const ruled = (rule: string, decision: Decision): Ruled => ({ rule, prompt, decision })
  const text = (answer: string) => textAnswer(answer, options.usage)
  switch (keyword) {
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
  for (let j = blocks.length - 1; j > resultAt && newest === undefined; j--) {
    const t = textOf(blocks[j]!)
    if (t !== undefined && !isInternal(t)) newest = t
  }
  const side = sideRequest(body, messages, newest, options)
  if (side !== undefined) return side
  if (newest !== undefined) return onPrompt(newest, messages, options, body)
  if (resultAt >= 0) return onToolResult(blocks[resultAt]!, messages, lastUser, options)
  const origin = originPrompt(messages, lastUser + 1)
  return origin === undefined
    ? { rule: "empty", prompt: undefined, decision: textAnswer("ECHO: ", options.usage) }
    : onPrompt(origin, messages, options, body)
}

// ---------------------------------------------------------------------------------------------------------
// The wire format
// ---------------------------------------------------------------------------------------------------------

// How often a SLOW answer sends a piece of its text.
const SLOW_TICK_MS = 100

const ERROR_TYPES: Readonly<Record<number, string>> = {
  400: "invalid_request_error",
  401: "authentication_error",
  429: "rate_limit_error",
  529: "overloaded_error"
}

/** The API's error JSON; the type follows the status unless given. */
export const errorJson = (status: number, message: string, type = ERROR_TYPES[status] ?? "api_error") => ({
  type: "error",
  error: { type, message }
})

/** The API's message JSON (the whole answer of a `stream: false` request, or `message_start`'s message). */
export const messageJson = (
  id: string,
  model: string,
  content: ReadonlyArray<Block>,
  stopReason: string | null,
  usage: Usage
) => ({
  id,
  type: "message",
  role: "assistant",
  model,
  content,
  stop_reason: stopReason,
  stop_sequence: null,
  usage: { ...usage, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 }
})

const sse = (type: string, data: Json): string => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`

const encoder = new TextEncoder()

/**
 * The SSE body of a streamed answer: `message_start`, per block `content_block_start`, one
 * `content_block_delta` (`text_delta` or `input_json_delta`) and `content_block_stop`, then `message_delta`
 * (stop reason, output tokens) and `message_stop`. Each element is what is sent at one moment, encoded: an
 * immediate answer is one element. A SLOW text is spread over `slowMs`, one delta per tick; HANG stops after
 * `message_start`. The waits are `Effect.sleep`s, so interrupting the stream (the client went away, or the
 * server closed) ends them.
 */
export const sseEvents = (
  id: string,
  model: string,
  decision: Exclude<Decision, { readonly _tag: "error" }>,
  usage: Usage
): Stream.Stream<Uint8Array> => {
  const send = (events: ReadonlyArray<string>) => encoder.encode(events.join(""))
  const answerUsage = decision._tag === "message" ? decision.usage : usage
  const start = sse("message_start", {
    message: messageJson(id, model, [], null, { ...answerUsage, output_tokens: 1 })
  })
  if (decision._tag === "hang") return Stream.concat(Stream.succeed(send([start])), Stream.never)

  const finish = [
    sse("message_delta", {
      delta: { stop_reason: decision.stopReason, stop_sequence: null },
      usage: { output_tokens: answerUsage.output_tokens }
    }),
    sse("message_stop", {})
  ]
  const blockStart = (index: number, block: Block) =>
    sse("content_block_start", {
      index,
      content_block: block.type === "text" ? { type: "text", text: "" } : { ...block, input: {} }
    })
  const textDelta = (index: number, text: string) =>
    sse("content_block_delta", { index, delta: { type: "text_delta", text } })
  const blockStop = (index: number) => sse("content_block_stop", { index })

  const [only] = decision.content
  if (decision.slowMs !== undefined && decision.content.length === 1 && only?.type === "text") {
    const full = only.text
    const ticks = Math.max(1, Math.round(decision.slowMs / SLOW_TICK_MS))
    const pause = Duration.millis(decision.slowMs / ticks)
    const tick = (i: number): ReadonlyArray<string> => {
      const piece = full.slice(Math.floor((i * full.length) / ticks), Math.floor(((i + 1) * full.length) / ticks))
      return [
        ...(piece === "" ? [] : [textDelta(0, piece)]),
        ...(i === ticks - 1 ? [blockStop(0), ...finish] : [])
      ]
    }
    return Stream.concat(
      Stream.succeed(send([start, blockStart(0, only)])),
      Stream.fromIterable(Arr.makeBy(ticks, tick)).pipe(
        Stream.mapEffect((events) => Effect.as(Effect.sleep(pause), events)),
        Stream.filterMap((events) => events.length === 0 ? Option.none() : Option.some(send(events)))
      )
    )
  }

  return Stream.succeed(send([
    start,
    ...decision.content.flatMap((block, index) => [
      blockStart(index, block),
      block.type === "text"
        ? textDelta(index, block.text)
        : sse("content_block_delta", {
          index,
          delta: { type: "input_json_delta", partial_json: JSON.stringify(block.input) }
        }),
      blockStop(index)
    ]),
    ...finish
  ]))
}

// ---------------------------------------------------------------------------------------------------------
// The server
// ---------------------------------------------------------------------------------------------------------

export interface RecordedRequest {
  readonly time: number // epoch ms (Clock) when the body was complete
  readonly method: string
  readonly url: string // with the query string, e.g. "/v1/messages?beta=true"
  readonly headers: Headers.Headers
  readonly model: string | undefined
  readonly body: unknown // parsed JSON, or the raw text if it was not JSON
  readonly rule: string // which rule answered: "ECHO", "READ", "READ:result", "side:probe", "not_found", ...
  readonly prompt: string | undefined // the user text the rule matched, if any
}

export interface Options {
  /** 0 (the default) takes any free port. */
  readonly port?: number
  /** The default is 127.0.0.1. */
  readonly host?: string
  /** The usage every answer reports (EXPENSIVE excepted); the default is 100 input, 20 output tokens. */
  readonly usage?: Usage
}

/** A running simulator. */
export interface Handle {
  /** The base URL for `ANTHROPIC_BASE_URL`, e.g. `http://127.0.0.1:41234`. */
  readonly url: string
  readonly port: number
  /** The requests so far (POSTs only), oldest first: a snapshot. */
  readonly requests: () => ReadonlyArray<RecordedRequest>
}

export class Simulator extends Context.Tag("@flotta/cli/Simulator")<Simulator, Handle>() {}

const MAX_BODY_BYTES = 64 * 1024 * 1024

const parseBody = (raw: string): unknown => {
  if (raw === "") return undefined
  return Option.getOrElse(Option.liftThrowable((s: string): unknown => JSON.parse(s))(raw), () => raw)
}

const formatHost = (host: string) => host.includes(":") ? `[${host}]` : host

/**
 * Starts a simulator in the current scope. Closing the scope stops the server and ends its open
 * connections (a HANG or SLOW stream included).
 */
export const start = (options: Options = {}) =>
  Effect.gen(function*() {
    const usage = options.usage ?? defaultUsage
    const recorded: Array<RecordedRequest> = []
    const counter = yield* Ref.make(0) // answered /v1/messages requests: the n of msg_fake_n and req_fake_n

    const nodeServer = Http.createServer()
    // A client that goes away mid-request, or sends garbage, must not take the server down.
    nodeServer.on("clientError", (_error, socket) => socket.destroy())
    nodeServer.on("request", (req: Http.IncomingMessage, res: Http.ServerResponse) => {
      req.on("error", () => {})
      res.on("error", () => {})
    })
    const server = yield* NodeHttpServer.make(() => nodeServer, {
      port: options.port ?? 0,
      host: options.host ?? "127.0.0.1"
    })

    const record = (request: HttpServerRequest.HttpServerRequest, body: unknown, rule: string, prompt?: string) =>
      Effect.flatMap(Clock.currentTimeMillis, (time) =>
        Effect.sync(() => {
          recorded.push({
            time,
            method: request.method,
            url: request.originalUrl,
            headers: request.headers,
            model: isObject(body) && typeof body.model === "string" ? body.model : undefined,
            body,
            rule,
            prompt
          })
        }))

    const readBody = (request: HttpServerRequest.HttpServerRequest) => Effect.map(request.text, parseBody)

    const errorResponse = (status: number, message: string, type?: string) =>
      Effect.map(Ref.get(counter), (n) =>
        HttpServerResponse.unsafeJson(errorJson(status, message, type), {
          status,
          headers: { "request-id": `req_fake_${n}` }
        }))

    const messages = Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      const body = yield* readBody(request)
      if (!isObject(body)) {
        yield* record(request, body, "bad_request")
        return yield* errorResponse(400, "fake: body is not a JSON object")
      }
      const n = yield* Ref.updateAndGet(counter, (n) => n + 1)
      const { decision, prompt, rule } = decide(body, { usage, toolId: `${TOOL_ID_PREFIX}${n}` })
      yield* record(request, body, rule, prompt)
      if (decision._tag === "error") return yield* errorResponse(decision.status, `fake error ${decision.status}`)

      const id = `msg_fake_${n}`
      const model = typeof body.model === "string" ? body.model : "claude-fake"
      const requestId = `req_fake_${n}`
      if (body.stream === true) {
        return HttpServerResponse.stream(sseEvents(id, model, decision, usage), {
          contentType: "text/event-stream",
          headers: { "cache-control": "no-cache", connection: "keep-alive", "request-id": requestId }
        })
      }
      if (decision._tag === "hang") return yield* Effect.never // no answer until the client gives up
      if (decision.slowMs !== undefined) yield* Effect.sleep(Duration.millis(decision.slowMs))
      return HttpServerResponse.unsafeJson(
        messageJson(id, model, decision.content, decision.stopReason, decision.usage),
        { headers: { "request-id": requestId } }
      )
    })

    const notFound = Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      const pathname = new URL(request.originalUrl, "http://simulator").pathname
      if (request.method === "POST") yield* record(request, yield* readBody(request), "not_found")
      return yield* errorResponse(404, `fake: no route ${request.method} ${pathname}`, "not_found_error")
    })

    const app = HttpRouter.empty.pipe(
      HttpRouter.post("/v1/messages", messages),
      Effect.catchTag("RouteNotFound", () => notFound),
      Effect.catchTag("RequestError", (error) => errorResponse(400, `fake: cannot read the request: ${error.message}`)),
      Effect.catchAllDefect((defect) =>
        errorResponse(500, `fake: ${defect instanceof Error ? defect.message : String(defect)}`)
      )
    )
    // The handlers run in the context captured here, so the body limit is set once.
    yield* server.serve(app).pipe(HttpIncomingMessage.withMaxBodySize(Option.some(MAX_BODY_BYTES)))

    // Runs before the platform's own `server.close()`, which alone would wait for open streams forever.
    yield* Effect.addFinalizer(() =>
      Effect.async<void>((resume) => {
        nodeServer.close(() => resume(Effect.void))
        nodeServer.closeAllConnections()
      })
    )

    const address = server.address
    const port = address._tag === "TcpAddress" ? address.port : 0
    const url = `http://${address._tag === "TcpAddress" ? formatHost(address.hostname) : "127.0.0.1"}:${port}`
    yield* Effect.logDebug("simulator listening").pipe(Effect.annotateLogs({ url }))
    return { url, port, requests: () => recorded.slice() } satisfies Handle
  })

/** The simulator as a layer: it listens while the layer is alive. */
export const layer = (options?: Options) => Layer.scoped(Simulator, start(options))

// ---------------------------------------------------------------------------------------------------------
// The offline environment
// ---------------------------------------------------------------------------------------------------------

/**
 * The environment of CLAUDE-CLI.md section 0 as data: the CLI talks only to the simulator at `url`, and all
 * its state lives under `root`. `dirs` must exist before the CLI starts (`offlineEnv` makes them).
 */
export const offlineLayout = (url: string, root: string) => {
  const home = path.join(root, "home")
  const configDir = path.join(home, ".claude")
  const tmp = path.join(home, "tmp")
  const env: Record<string, string> = {
    HOME: home,
    CLAUDE_CONFIG_DIR: configDir,
    CLAUDE_CODE_TMPDIR: tmp,
    ANTHROPIC_BASE_URL: url,
    ANTHROPIC_API_KEY: "dummy",
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1", // no DNS, no api.anthropic.com
    DISABLE_AUTOUPDATER: "1",
    CLAUDE_CODE_MAX_RETRIES: "0", // a failure shows at once instead of after ten retries
    API_TIMEOUT_MS: "10000", // not 2000: SLOW replies may take several seconds
    NO_PROXY: "127.0.0.1,localhost"
  }
  return { env, dirs: [home, configDir, tmp] as ReadonlyArray<string> }
}

/** Makes the directories of `offlineLayout(url, root)` and returns its environment. */
export const offlineEnv = (url: string, root: string) =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const { dirs, env } = offlineLayout(url, root)
    yield* Effect.forEach(dirs, (dir) => fs.makeDirectory(dir, { recursive: true }), { discard: true })
    return env
  })
