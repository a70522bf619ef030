/**
 * The hand decoders of the hot frames agree with the Schemas (the contract) on the real CLI's captured frames
 * and on the shapes around them: defaults, nulls, absent fields, and wrong types.
 */
import { assert, describe, it } from "@effect/vitest"
import { Option, Schema } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { TESTED_VERSION } from "../src/ClaudeCli.js"
import * as Protocol from "../src/ClaudeProtocol.js"

const fixture = JSON.parse(
  fs.readFileSync(
    path.join(import.meta.dirname, "..", "..", "..", "test", "fixtures", `cli-frames-${TESTED_VERSION}.json`),
    "utf8"
  )
) as { readonly turns: ReadonlyArray<{ readonly frames: ReadonlyArray<Record<string, unknown>> }> }
const captured = fixture.turns.flatMap((t) => t.frames)

/** Frames of usage limits, a throttle, an API key's 429 and a warning, captured from the real CLI (see its note). */
const limits = JSON.parse(
  fs.readFileSync(
    path.join(import.meta.dirname, "..", "..", "..", "test", "fixtures", `cli-limit-frames-${TESTED_VERSION}.json`),
    "utf8"
  )
) as { readonly cases: Record<string, { readonly frames: ReadonlyArray<Record<string, unknown>> }> }
const limitCase = (name: string) => limits.cases[name]!.frames

const bySchema = {
  result: Schema.decodeUnknownOption(Protocol.ResultFrame),
  init: Schema.decodeUnknownOption(Protocol.SystemInitFrame),
  assistant: Schema.decodeUnknownOption(Protocol.AssistantFrame),
  rateLimit: Schema.decodeUnknownOption(Protocol.RateLimitEventFrame)
}

const agree = (json: Record<string, unknown>) => {
  const line = JSON.stringify(json)
  const decoded = Protocol.decodeLine(line)
  const schema = json["type"] === "result"
    ? Option.map(bySchema.result(json), (frame): Protocol.Frame => ({ _tag: "Result", frame }))
    : json["type"] === "assistant"
    ? Option.map(bySchema.assistant(json), (frame): Protocol.Frame => ({ _tag: "Assistant", frame }))
    : json["type"] === "rate_limit_event"
    ? Option.map(bySchema.rateLimit(json), (frame): Protocol.Frame => ({ _tag: "RateLimit", frame }))
    : Option.map(bySchema.init(json), (frame): Protocol.Frame => ({ _tag: "Init", frame }))
  assert.deepStrictEqual(decoded, schema, line.slice(0, 200))
}

describe("the hot frames' decoders", () => {
  const hot = captured.filter((f) =>
    f["type"] === "result" || f["type"] === "assistant" || (f["type"] === "system" && f["subtype"] === "init")
  )

  it("agree with the Schemas on every captured frame of the real CLI", () => {
    assert.isAtLeast(hot.length, 6)
    for (const frame of hot) agree(frame)
  })

  it("agree on defaults, nulls and absent fields", () => {
    agree({ type: "result", subtype: "success" })
    agree({ type: "result", subtype: "error_during_execution", result: null, errors: ["x"], is_error: true })
    agree({
      type: "result",
      subtype: "success",
      api_error_status: null,
      terminal_reason: null,
      structured_output: null
    })
    agree({ type: "result", subtype: "success", permission_denials: [{ tool_name: "Write", tool_input: { a: 1 } }] })
    agree({ type: "system", subtype: "init", session_id: "s" })
    agree({ type: "assistant", message: { content: [] } })
    agree({ type: "assistant", message: { content: [{ type: "tool_use", id: "t", name: "Read", input: {} }] } })
  })

  it("agree on wrong types: the frame is not decoded", () => {
    agree({ type: "result" })
    agree({ type: "result", subtype: "success", result: 7 })
    agree({ type: "result", subtype: "success", is_error: "yes" })
    agree({ type: "result", subtype: "success", permission_denials: [{ tool: "x" }] })
    agree({ type: "result", subtype: "success", usage: [] })
    agree({ type: "system", subtype: "init" })
    agree({ type: "system", subtype: "init", session_id: "s", tools: [1] })
    agree({ type: "assistant", message: { content: [{ text: "no type" }] } })
    agree({ type: "assistant", message: {} })
  })
})

describe("usage-limit frames", () => {
  const all = Object.values(limits.cases).flatMap((c) => c.frames).filter((f) =>
    f["type"] === "result" || f["type"] === "assistant" || f["type"] === "rate_limit_event"
  )

  it("the decoders agree with the Schemas on every captured frame", () => {
    assert.isAtLeast(all.length, 12)
    for (const frame of all) agree(frame)
  })

  it("agree on absent, null and wrong fields", () => {
    agree({ type: "rate_limit_event", rate_limit_info: { status: "allowed" } })
    agree({
      type: "rate_limit_event",
      rate_limit_info: { status: "rejected", resetsAt: 1, rateLimitType: "five_hour" }
    })
    agree({ type: "rate_limit_event" })
    agree({ type: "rate_limit_event", rate_limit_info: { status: 1 } })
    agree({ type: "rate_limit_event", rate_limit_info: { status: "rejected", resetsAt: "soon" } })
    agree({ type: "result", subtype: "success", api_error: null, api_error_type: null })
    agree({ type: "result", subtype: "success", api_error: 429 })
    agree({ type: "assistant", message: { content: [] }, error: "rate_limit", api_error_params: {} })
    agree({ type: "assistant", message: { content: [] }, error: 1 })
    agree({ type: "assistant", message: { content: [] }, api_error_params: [] })
    agree({ type: "assistant", message: { content: [] }, api_error_params: { rate_limit_info: { status: 2 } } })
  })

  it("a usage limit: the event, then the CLI's own message, then a result that is an API error", () => {
    const [event, message, result] = limitCase("usage_limit").map((f) =>
      Option.getOrThrow(Protocol.decodeLine(JSON.stringify(f)))
    )
    assert.strictEqual(event!._tag, "RateLimit")
    const info = (event as Extract<Protocol.Frame, { _tag: "RateLimit" }>).frame.rate_limit_info
    assert.strictEqual(info.status, "rejected")
    assert.strictEqual(info.rateLimitType, "five_hour")
    assert.isNumber(info.resetsAt)
    const assistant = (message as Extract<Protocol.Frame, { _tag: "Assistant" }>).frame
    assert.strictEqual(assistant.error, "rate_limit")
    assert.strictEqual(assistant.api_error, "usage_limit_reached")
    assert.deepStrictEqual(assistant.api_error_params?.rate_limit_info, info)
    const frame = (result as Extract<Protocol.Frame, { _tag: "Result" }>).frame
    assert.include(frame, {
      subtype: "success",
      is_error: true,
      api_error_status: 429,
      api_error: "usage_limit_reached"
    })
    assert.match(Protocol.resultText(frame), /^You've hit your 5-hour limit/)
  })

  it("a throttle and an API key's 429 say 429 without usage_limit_reached; a warning says allowed_warning", () => {
    for (const name of ["throttle", "api_key_429"]) {
      const result = limitCase(name).find((f) => f["type"] === "result")!
      const frame = Option.getOrThrow(Protocol.decodeResultFrame(result))
      assert.strictEqual(frame.api_error_status, 429, name)
      assert.strictEqual(frame.api_error_type, "rate_limit_error", name)
      assert.isUndefined(frame.api_error, name)
    }
    const warning = limitCase("allowed_warning").find((f) => f["type"] === "rate_limit_event")!
    const info = Option.getOrThrow(Protocol.decodeRateLimitEventFrame(warning)).rate_limit_info
    assert.include(info, { status: "allowed_warning", rateLimitType: "five_hour", utilization: 0.92 })
  })
})

describe("the frames inside a turn: tool results and streamed text", () => {
  const toolResults = Schema.decodeUnknownOption(Protocol.UserToolResultsFrame)
  const textDelta = Schema.decodeUnknownOption(Protocol.TextDeltaFrame)
  const decode = (json: Record<string, unknown>) => Option.getOrThrow(Protocol.decodeLine(JSON.stringify(json)))

  it("a user frame's tool results decode as the Schema says, on the real CLI's frames", () => {
    const users = captured.filter((f) => f["type"] === "user")
    assert.isAtLeast(users.length, 1)
    for (const json of users) {
      const frame = decode(json)
      assert.strictEqual(frame._tag, "ToolResults")
      assert.deepStrictEqual(
        Option.some((frame as Extract<Protocol.Frame, { _tag: "ToolResults" }>).frame),
        toolResults(json)
      )
    }
  })

  it("content as a string or as parts, an error flag; a user frame without tool results is Other", () => {
    const parts = {
      type: "user",
      message: {
        content: [{
          type: "tool_result",
          tool_use_id: "t1",
          is_error: true,
          content: [{ type: "text", text: "one" }, { type: "image" }, { type: "text", text: "two" }]
        }]
      }
    }
    const frame = decode(parts)
    assert.strictEqual(frame._tag, "ToolResults")
    const block = (frame as Extract<Protocol.Frame, { _tag: "ToolResults" }>).frame.message.content[0]!
    assert.deepStrictEqual(Option.map(toolResults(parts), (f) => f.message.content[0]), Option.some(block))
    assert.strictEqual(Protocol.toolResultText(block), "one\n[image]\ntwo")
    assert.isTrue(block.is_error)
    // The CLI's replay of a prompt, and a malformed result.
    assert.deepStrictEqual(decode({ type: "user", message: { content: "hello" } }), { _tag: "Other", type: "user" })
    assert.deepStrictEqual(
      decode({ type: "user", message: { content: [{ type: "tool_result", is_error: "yes", tool_use_id: "t" }] } }),
      { _tag: "Other", type: "user" }
    )
  })

  it("a stream_event's text delta decodes as the Schema says; other events are Other", () => {
    const delta = {
      type: "stream_event",
      event: { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "Read" } },
      session_id: "s"
    }
    const frame = decode(delta)
    assert.strictEqual(frame._tag, "TextDelta")
    assert.deepStrictEqual(
      Option.some((frame as Extract<Protocol.Frame, { _tag: "TextDelta" }>).frame),
      textDelta(delta)
    )
    const start = { type: "stream_event", event: { type: "message_start", message: {} } }
    assert.deepStrictEqual(decode(start), { _tag: "Other", type: "stream_event" })
    const input = { type: "stream_event", event: { type: "content_block_delta", delta: { type: "input_json_delta" } } }
    assert.deepStrictEqual(decode(input), { _tag: "Other", type: "stream_event" })
  })
})
