// A local fake of the Anthropic Messages API for integration tests that run the real `claude` CLI offline.
// The "model" is a small rule engine keyed on the newest user text (see `decide` below and CLAUDE-CLI.md).
import * as fs from "node:fs"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import * as path from "node:path"

export interface Usage {
  readonly input_tokens: number
  readonly output_tokens: number
}

export interface RecordedRequest {
  readonly time: number // epoch ms when the body was complete
  readonly method: string
  readonly url: string // with the query string, e.g. "/v1/messages?beta=true"
  readonly headers: http.IncomingHttpHeaders
  readonly model: string | undefined
  readonly body: unknown // parsed JSON, or the raw text if it was not JSON
  readonly rule: string // which rule answered: "ECHO", "READ", "READ:result", "side", "not_found", ...
  readonly prompt: string | undefined // the user text the rule matched, if any
}

export interface FakeMessagesApi {
  readonly url: string
  readonly port: number
  readonly requests: ReadonlyArray<RecordedRequest>
  close(): Promise<void>
}

export interface FakeMessagesApiOptions {
  readonly port?: number
  readonly usage?: Usage
}

type Json = Record<string, unknown>

type Block =
  | { readonly type: "text"; readonly text: string }
  | { readonly type: "tool_use"; readonly id: string; readonly name: string; readonly input: Json }

type Decision =
  | {
    readonly _tag: "message"
    readonly content: ReadonlyArray<Block>
    readonly stopReason: "end_turn" | "tool_use"
    readonly usage: Usage
    readonly slowMs?: number
  }
  | { readonly _tag: "error"; readonly status: number }
  | { readonly _tag: "hang" }

interface Ruled {
  readonly rule: string
  readonly prompt: string | undefined
  readonly decision: Decision
}

const DEFAULT_USAGE: Usage = { input_tokens: 100, output_tokens: 20 }
const EXPENSIVE_USAGE: Usage = { input_tokens: 2_000_000, output_tokens: 200_000 }
const SLOW_TICK_MS = 100
const MAX_BODY_BYTES = 64 * 1024 * 1024

// Texts the CLI itself injects as "user" text; they are not prompts, so the fake looks past them.
const CLI_INTERNAL_PREFIXES = ["[structured-output-enforce]", "[Request interrupted"]

const isObject = (u: unknown): u is Json => typeof u === "object" && u !== null && !Array.isArray(u)

const stripReminders = (text: string): string =>
  text.replace(/<system-reminder>[\s\S]*?(<\/system-reminder>|$)/g, "").trim()

const blocksOf = (content: unknown): ReadonlyArray<Json> =>
  typeof content === "string"
    ? [{ type: "text", text: content }]
    : Array.isArray(content)
    ? content.filter(isObject)
    : []

const textOf = (block: Json): string | undefined => {
  if (block.type !== "text" || typeof block.text !== "string") return undefined
  const text = stripReminders(block.text)
  return text === "" ? undefined : text
}

const isOurToolResult = (block: Json) =>
  block.type === "tool_result" && typeof block.tool_use_id === "string" && block.tool_use_id.startsWith("toolu_fake_")

const isInternal = (text: string) => CLI_INTERNAL_PREFIXES.some((p) => text.startsWith(p))

// The text a tool_result carries: a string, or text blocks.
const toolResultText = (block: Json): string =>
  typeof block.content === "string"
    ? block.content
    : blocksOf(block.content).map((b) => typeof b.text === "string" ? b.text : "").join("")

const ERROR_TYPES: Readonly<Record<number, string>> = {
  400: "invalid_request_error",
  401: "authentication_error",
  429: "rate_limit_error",
  529: "overloaded_error"
}

const errorTypeOf = (status: number): string => ERROR_TYPES[status] ?? "api_error"

const errorBody = (status: number, message: string, type = errorTypeOf(status)) =>
  JSON.stringify({ type: "error", error: { type, message } })

// "KEYWORD rest...": keywords are upper case and must start the text.
const parsePrompt = (prompt: string): { readonly keyword: string; readonly rest: string } => {
  const match = /^([A-Z_]+)(?:\s+([\s\S]*))?$/.exec(prompt)
  return { keyword: match?.[1] ?? "", rest: (match?.[2] ?? "").trim() }
}

// The last `REMEMBER <fact>` in the users' texts: a whole prompt, or a line of a compaction summary.
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

// The rule engine: pure apart from the id counter.
const makeModel = (usage: Usage) => {
  let counter = 0
  const nextToolId = () => `toolu_fake_${++counter}`
  const text = (t: string, extra?: { usage?: Usage; slowMs?: number }): Decision => ({
    _tag: "message",
    content: [{ type: "text", text: t }],
    stopReason: "end_turn",
    usage: extra?.usage ?? usage,
    ...(extra?.slowMs !== undefined ? { slowMs: extra.slowMs } : {})
  })
  const tool = (name: string, input: Json): Decision => ({
    _tag: "message",
    content: [{ type: "tool_use", id: nextToolId(), name, input }],
    stopReason: "tool_use",
    usage
  })

  // Rules on a user prompt (trimmed, reminders stripped); `messages` is the whole request history.
  const onPrompt = (prompt: string, messages: ReadonlyArray<Json>): Ruled => {
    const { keyword, rest } = parsePrompt(prompt)
    const ruled = (rule: string, decision: Decision): Ruled => ({ rule, prompt, decision })
    switch (keyword) {
      case "REMEMBER":
        return ruled("REMEMBER", text("OK, I will remember that."))
      case "RECALL": {
        const fact = rememberedFact(messages)
        return ruled("RECALL", text(fact === undefined ? "I know no fact." : `The fact is: ${fact}`))
      }
      case "READ":
        return ruled("READ", tool("Read", { file_path: rest }))
      case "WRITE": {
        const [, file = "", content = ""] = /^(\S+)\s*([\s\S]*)$/.exec(rest) ?? []
        return ruled("WRITE", tool("Write", { file_path: file, content: `${content}\n` }))
      }
      case "BASH":
        return ruled("BASH", tool("Bash", { command: rest, description: "run" }))
      case "STRUCTURED": {
        try {
          const input: unknown = JSON.parse(rest)
          if (isObject(input)) return ruled("STRUCTURED", tool("StructuredOutput", input))
        } catch {
          // falls through to the text answer
        }
        return ruled("STRUCTURED", text(`STRUCTURED needs a JSON object, got: ${rest}`))
      }
      case "STRUCTURED_TEXT":
        return ruled("STRUCTURED_TEXT", text("no structured output here"))
      case "LOOP":
        return ruled("LOOP", tool("Read", { file_path: "/etc/hostname" }))
      case "EXPENSIVE":
        return ruled("EXPENSIVE", text("That was expensive.", { usage: EXPENSIVE_USAGE }))
      case "SLOW": {
        const [, ms = "1000", words = ""] = /^(\d+)\s*([\s\S]*)$/.exec(rest) ?? []
        return ruled("SLOW", text(`SLOW DONE ${words}`.trim(), { slowMs: Number(ms) }))
      }
      case "HANG":
        return ruled("HANG", { _tag: "hang" })
      case "ERROR": {
        const status = Number.parseInt(rest, 10)
        return ruled("ERROR", { _tag: "error", status: status >= 400 && status <= 599 ? status : 500 })
      }
      case "ECHO":
        return ruled("ECHO", text(`ECHO: ${rest}`))
      default:
        return ruled("ECHO", text(`ECHO: ${prompt}`))
    }
  }

  // Newest prompt text in user messages before index `before`, skipping CLI-internal texts.
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

  // The answer to a tool_result for one of our tool_uses.
  const onToolResult = (result: Json, messages: ReadonlyArray<Json>, lastUser: number): Ruled => {
    const origin = originPrompt(messages, lastUser)
    if (origin !== undefined && parsePrompt(origin).keyword === "LOOP") {
      return { rule: "LOOP", prompt: origin, decision: tool("Read", { file_path: "/etc/hostname" }) }
    }
    let call: Json | undefined
    for (const m of messages) {
      if (m.role !== "assistant") continue
      for (const b of blocksOf(m.content)) if (b.type === "tool_use" && b.id === result.tool_use_id) call = b
    }
    const name = typeof call?.name === "string" ? call.name : "unknown"
    const input = isObject(call?.input) ? call.input : {}
    const output = toolResultText(result)
    const denied = result.is_error === true
    const ruled = (rule: string, decision: Decision): Ruled => ({ rule: `${rule}:result`, prompt: origin, decision })
    switch (name) {
      case "Read":
        return ruled("READ", text(`TOOL_RESULT Read: ${output.slice(0, 200)}`))
      case "Write":
        return ruled("WRITE", text(denied ? `DENIED: ${output}` : `WROTE ${String(input.file_path)}`))
      case "Bash":
        return ruled("BASH", text(denied ? `DENIED: ${output}` : `BASH_RESULT: ${output.slice(0, 200)}`))
      case "StructuredOutput":
        return ruled("STRUCTURED", text(denied ? `DENIED: ${output}` : "Done."))
      default:
        return ruled("TOOL", text(`TOOL_RESULT ${name}: ${output.slice(0, 200)}`))
    }
  }

  // Requests that are not a user's turn get a short text and never reach the rules: model/quota probes
  // (max_tokens 1), prompt suggestions, and compaction (answered with a summary that keeps the facts).
  const sideRequest = (body: Json, messages: ReadonlyArray<Json>, newest: string | undefined): Ruled | undefined => {
    const side = (rule: string, answer: string): Ruled => ({
      rule: `side:${rule}`,
      prompt: newest,
      decision: text(answer)
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

  const decide = (body: Json): Ruled => {
    const messages = Array.isArray(body.messages) ? body.messages.filter(isObject) : []
    let lastUser = messages.length - 1
    while (lastUser >= 0 && messages[lastUser]!.role !== "user") lastUser--
    const blocks = lastUser < 0 ? [] : blocksOf(messages[lastUser]!.content)
    // A tool_result for a tool_use we made, unless the user typed something newer next to it
    // (after an interrupt the CLI merges the new prompt into the tool_result message).
    let resultAt = blocks.length - 1
    while (resultAt >= 0 && !isOurToolResult(blocks[resultAt]!)) resultAt--
    let newest: string | undefined
    for (let j = blocks.length - 1; j > resultAt && newest === undefined; j--) {
      const t = textOf(blocks[j]!)
      if (t !== undefined && !isInternal(t)) newest = t
    }
    const side = sideRequest(body, messages, newest)
    if (side !== undefined) return side
    if (newest !== undefined) return onPrompt(newest, messages)
    if (resultAt >= 0) return onToolResult(blocks[resultAt]!, messages, lastUser)
    // Only CLI-internal text (e.g. a structured-output nudge): answer the earlier prompt again.
    const origin = originPrompt(messages, lastUser + 1)
    return origin === undefined
      ? { rule: "empty", prompt: undefined, decision: text("ECHO: ") }
      : onPrompt(origin, messages)
  }

  return { decide }
}

const messageJson = (
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

export function startFakeMessagesApi(options?: FakeMessagesApiOptions): Promise<FakeMessagesApi> {
  const model = makeModel(options?.usage ?? DEFAULT_USAGE)
  const requests: Array<RecordedRequest> = []
  const timers = new Set<NodeJS.Timeout>()
  let messageCounter = 0

  const sendJson = (res: http.ServerResponse, status: number, body: string) => {
    if (res.headersSent || res.destroyed) return
    res.writeHead(status, { "content-type": "application/json", "request-id": `req_fake_${messageCounter}` })
    res.end(body)
  }

  const respond = (req: http.IncomingMessage, res: http.ServerResponse, raw: string) => {
    const pathname = new URL(req.url ?? "/", "http://fake").pathname
    let body: unknown = raw
    try {
      body = raw === "" ? undefined : JSON.parse(raw)
    } catch {
      // recorded as raw text
    }
    const reqModel = isObject(body) && typeof body.model === "string" ? body.model : undefined
    const record = (rule: string, prompt: string | undefined) => {
      if (req.method === "POST") {
        requests.push({
          time: Date.now(),
          method: req.method,
          url: req.url ?? "",
          headers: req.headers,
          model: reqModel,
          body,
          rule,
          prompt
        })
      }
    }
    if (req.method !== "POST" || pathname !== "/v1/messages") {
      record("not_found", undefined)
      return sendJson(res, 404, errorBody(404, `fake: no route ${req.method} ${pathname}`, "not_found_error"))
    }
    if (!isObject(body)) {
      record("bad_request", undefined)
      return sendJson(res, 400, errorBody(400, "fake: body is not a JSON object"))
    }
    const ruled = model.decide(body)
    record(ruled.rule, ruled.prompt)
    const decision = ruled.decision
    const id = `msg_fake_${++messageCounter}`
    const name = reqModel ?? "claude-fake"
    if (decision._tag === "error") {
      return sendJson(res, decision.status, errorBody(decision.status, `fake error ${decision.status}`))
    }
    // Timers of this response die with its connection (client gone) or with close().
    const own = new Set<NodeJS.Timeout>()
    res.once("close", () => {
      for (const t of own) {
        clearTimeout(t)
        timers.delete(t)
      }
      own.clear()
    })
    const later = (ms: number, f: () => void) => {
      const t = setTimeout(() => {
        own.delete(t)
        timers.delete(t)
        f()
      }, ms)
      own.add(t)
      timers.add(t)
    }
    if (body.stream !== true) {
      if (decision._tag === "hang") return // no answer until the client gives up
      const send = () =>
        sendJson(res, 200, JSON.stringify(messageJson(id, name, decision.content, decision.stopReason, decision.usage)))
      return decision.slowMs !== undefined ? later(decision.slowMs, send) : send()
    }

    res.writeHead(200, {
      "content-type": "text/event-stream",
      "cache-control": "no-cache",
      connection: "keep-alive",
      "request-id": `req_fake_${messageCounter}`
    })
    const event = (type: string, data: Json) => {
      if (!res.destroyed && !res.writableEnded) {
        res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`)
      }
    }
    const usage = decision._tag === "message" ? decision.usage : options?.usage ?? DEFAULT_USAGE
    event("message_start", { message: messageJson(id, name, [], null, { ...usage, output_tokens: 1 }) })
    if (decision._tag === "hang") return // message_start, then silence until the client disconnects

    const blocks = decision.content
    const finish = () => {
      event("message_delta", {
        delta: { stop_reason: decision.stopReason, stop_sequence: null },
        usage: { output_tokens: usage.output_tokens }
      })
      event("message_stop", {})
      if (!res.destroyed) res.end()
    }
    const blockStart = (index: number, block: Block) =>
      event("content_block_start", {
        index,
        content_block: block.type === "text" ? { type: "text", text: "" } : { ...block, input: {} }
      })

    if (decision.slowMs !== undefined && blocks.length === 1 && blocks[0]!.type === "text") {
      // Spread the text over slowMs, one delta per tick, so an interrupt or kill lands mid-turn.
      const full = blocks[0].text
      const ticks = Math.max(1, Math.round(decision.slowMs / SLOW_TICK_MS))
      blockStart(0, blocks[0])
      const tick = (i: number) => {
        const piece = full.slice(Math.floor(((i - 1) * full.length) / ticks), Math.floor((i * full.length) / ticks))
        if (piece !== "") event("content_block_delta", { index: 0, delta: { type: "text_delta", text: piece } })
        if (i < ticks) return later(decision.slowMs! / ticks, () => tick(i + 1))
        event("content_block_stop", { index: 0 })
        finish()
      }
      return later(decision.slowMs / ticks, () => tick(1))
    }

    blocks.forEach((block, index) => {
      blockStart(index, block)
      if (block.type === "text") {
        event("content_block_delta", { index, delta: { type: "text_delta", text: block.text } })
      } else {
        event("content_block_delta", {
          index,
          delta: { type: "input_json_delta", partial_json: JSON.stringify(block.input) }
        })
      }
      event("content_block_stop", { index })
    })
    finish()
  }

  const server = http.createServer((req, res) => {
    // A client that goes away mid-request must not take the server down.
    req.on("error", () => {})
    res.on("error", () => {})
    const chunks: Array<Buffer> = []
    let size = 0
    req.on("data", (chunk: Buffer) => {
      size += chunk.length
      if (size > MAX_BODY_BYTES) req.destroy()
      else chunks.push(chunk)
    })
    req.on("end", () => {
      try {
        respond(req, res, Buffer.concat(chunks).toString("utf8"))
      } catch (e) {
        sendJson(res, 500, errorBody(500, `fake: ${e instanceof Error ? e.message : String(e)}`))
      }
    })
  })
  server.on("clientError", (_err, socket) => socket.destroy())

  return new Promise((resolve, reject) => {
    server.once("error", reject)
    server.listen(options?.port ?? 0, "127.0.0.1", () => {
      server.off("error", reject)
      const port = (server.address() as AddressInfo).port
      resolve({
        url: `http://127.0.0.1:${port}`,
        port,
        requests,
        close: () =>
          new Promise<void>((done) => {
            for (const t of timers) clearTimeout(t)
            timers.clear()
            server.close(() => done())
            server.closeAllConnections()
          })
      })
    })
  })
}

// The environment of CLAUDE-CLI.md section 0: the CLI talks only to `api`, and all its state lives under `root`.
export function offlineEnv(api: { readonly url: string }, root: string): Record<string, string> {
  const home = path.join(root, "home")
  const configDir = path.join(home, ".claude")
  const tmp = path.join(home, "tmp")
  for (const dir of [home, configDir, tmp]) fs.mkdirSync(dir, { recursive: true })
  return {
    HOME: home,
    CLAUDE_CONFIG_DIR: configDir,
    CLAUDE_CODE_TMPDIR: tmp,
    ANTHROPIC_BASE_URL: api.url,
    ANTHROPIC_API_KEY: "dummy",
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
    DISABLE_AUTOUPDATER: "1",
    CLAUDE_CODE_MAX_RETRIES: "0",
    API_TIMEOUT_MS: "10000", // not 2000: SLOW replies may take several seconds
    NO_PROXY: "127.0.0.1,localhost"
  }
}
