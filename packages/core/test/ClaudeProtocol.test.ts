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

const bySchema = {
  result: Schema.decodeUnknownOption(Protocol.ResultFrame),
  init: Schema.decodeUnknownOption(Protocol.SystemInitFrame),
  assistant: Schema.decodeUnknownOption(Protocol.AssistantFrame)
}

const agree = (json: Record<string, unknown>) => {
  const line = JSON.stringify(json)
  const decoded = Protocol.decodeLine(line)
  const schema = json["type"] === "result"
    ? Option.map(bySchema.result(json), (frame): Protocol.Frame => ({ _tag: "Result", frame }))
    : json["type"] === "assistant"
    ? Option.map(bySchema.assistant(json), (frame): Protocol.Frame => ({ _tag: "Assistant", frame }))
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
