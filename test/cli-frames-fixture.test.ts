/**
 * The frames the real `claude` CLI wrote (test/fixtures/cli-frames-2.1.332.json, made by capture-cli-frames.ts)
 * against the fleet's decoder: each stdout line gives the frame the fleet expects, and a turn's result decodes
 * with the fields the fleet reads. When the CLI changes shape, a recapture makes this fail.
 */
import { assert, describe, it } from "@effect/vitest"
import { Option } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { TESTED_VERSION } from "../packages/core/src/ClaudeCli.js"
import * as Protocol from "../packages/core/src/ClaudeProtocol.js"

type Json = Record<string, unknown>

interface Fixture {
  readonly claude_code_version: string
  readonly args: ReadonlyArray<string>
  readonly cwd: string
  readonly turns: ReadonlyArray<{ readonly name: string; readonly frames: ReadonlyArray<Json> }>
  readonly exit: { readonly code: number | null; readonly frames: ReadonlyArray<Json> }
}

const FIXTURE = path.join(import.meta.dirname, "fixtures", `cli-frames-${TESTED_VERSION}.json`)
const fixture = JSON.parse(fs.readFileSync(FIXTURE, "utf8")) as Fixture
const sessionId = fixture.args[fixture.args.indexOf("--session-id") + 1]

const turn = (name: string) => {
  const found = fixture.turns.find((t) => t.name === name)
  assert.isDefined(found, `the fixture has a ${name} turn`)
  return found!
}

/** Decodes a frame as the fleet does: from its stdout line. */
const decode = (frame: Json): Protocol.Frame =>
  Option.getOrThrowWith(Protocol.decodeLine(JSON.stringify(frame)), () => new Error(`no frame: ${frame.type}`))

/** The tag the fleet must give each kind of line the CLI writes. */
const expectedTag = (frame: Json): Protocol.Frame["_tag"] => {
  switch (frame.type) {
    case "system":
      return frame.subtype === "init" ? "Init" : "Other"
    case "assistant":
      return "Assistant"
    case "user":
      return Array.isArray((frame.message as Json | undefined)?.content) &&
          ((frame.message as Json).content as ReadonlyArray<Json>).some((b) => b.type === "tool_result")
        ? "ToolResults"
        : "Other"
    case "result":
      return "Result"
    case "control_request":
      return "ControlRequest"
    case "control_response":
      return "ControlResponse"
    case "control_cancel_request":
      return "ControlCancel"
    default:
      return "Other"
  }
}

const decodedOf = <T extends Protocol.Frame["_tag"]>(frames: ReadonlyArray<Json>, tag: T) =>
  frames.map(decode).filter((f): f is Extract<Protocol.Frame, { readonly _tag: T }> => f._tag === tag)

const onlyResult = (frames: ReadonlyArray<Json>) => {
  const results = decodedOf(frames, "Result")
  assert.strictEqual(results.length, 1, "exactly one result per turn")
  return results[0]!.frame
}

describe(`the real CLI's frames (${TESTED_VERSION})`, () => {
  it("were captured from the pinned version, as the fleet spawns it", () => {
    assert.strictEqual(fixture.claude_code_version, TESTED_VERSION)
    for (const flag of ["--input-format", "--output-format", "--verbose", "--permission-prompt-tool"]) {
      assert.include(fixture.args, flag)
    }
    assert.deepStrictEqual(fixture.turns.map((t) => t.name).slice(0, 3), ["initialize", "text", "read"])
    assert.strictEqual(fixture.exit.code, 0, "exit 0 after EOF following a successful turn")
  })

  it("every line decodes, with the tag its type calls for", () => {
    const all = [...fixture.turns.flatMap((t) => t.frames), ...fixture.exit.frames]
    assert.isAbove(all.length, 8)
    for (const frame of all) {
      const decoded = Protocol.decodeLine(JSON.stringify(frame))
      assert.isTrue(Option.isSome(decoded), `decodes: ${JSON.stringify(frame).slice(0, 200)}`)
      assert.strictEqual(Option.getOrThrow(decoded)._tag, expectedTag(frame), `tag of ${String(frame.type)}`)
      if (expectedTag(frame) === "Other") {
        assert.strictEqual((Option.getOrThrow(decoded) as { type: string }).type, frame.type)
      }
    }
  })

  it("the initialize answer is a success control_response for the fleet's request id", () => {
    const [response] = decodedOf(turn("initialize").frames, "ControlResponse")
    assert.isDefined(response)
    assert.strictEqual(response!.frame.response.subtype, "success")
    assert.strictEqual(response!.frame.response.request_id, "flotta_init_1")
    const answer = response!.frame.response.response as Json
    assert.strictEqual(answer.claude_code_version, TESTED_VERSION)
    assert.isArray(answer.commands)
  })

  it("a text turn: system/init, the assistant text, then a success result the fleet reads", () => {
    const { frames } = turn("text")
    const tags = frames.map(decode).map((f) => f._tag)
    assert.isBelow(tags.indexOf("Init"), tags.indexOf("Assistant"), "init before the assistant frame")
    assert.isBelow(tags.indexOf("Assistant"), tags.indexOf("Result"), "assistant frame before the result")

    const [init] = decodedOf(frames, "Init")
    assert.strictEqual(init!.frame.session_id, sessionId)
    assert.deepStrictEqual(init!.frame.tools, ["Read"], "--tools Read is all the model is offered")
    assert.strictEqual(init!.frame.cwd, fixture.cwd)
    assert.isString(init!.frame.model)

    const [assistant] = decodedOf(frames, "Assistant")
    assert.deepStrictEqual(assistant!.frame.message.content.map((b) => [b.type, b.text]), [["text", "ECHO: hello"]])

    const result = onlyResult(frames)
    assert.strictEqual(result.subtype, "success")
    assert.isFalse(result.is_error)
    assert.strictEqual(result.result, "ECHO: hello")
    assert.strictEqual(Protocol.resultText(result), "ECHO: hello")
    assert.strictEqual(result.num_turns, 1)
    assert.strictEqual(result.session_id, sessionId)
    assert.isAbove(result.duration_ms, 0)
    assert.isAbove(result.total_cost_usd, 0)
    assert.strictEqual(result.terminal_reason, "completed")
    assert.strictEqual(result.api_error_status, null)
    assert.deepStrictEqual(result.permission_denials, [])
    assert.strictEqual(result.structured_output, undefined)
    assert.isNumber(result.usage?.input_tokens)
    assert.isNumber(result.usage?.output_tokens)
  })

  it("a Read turn: the tool_use, the CLI's user tool_result, then the follow-up answer", () => {
    const { frames } = turn("read")
    const assistants = decodedOf(frames, "Assistant").map((f) => f.frame.message.content)
    const toolUse = assistants.flat().find((b) => b.type === "tool_use")
    assert.isDefined(toolUse)
    assert.strictEqual(toolUse!.name, "Read")
    assert.deepStrictEqual(toolUse!.input, { file_path: "/etc/hostname" })

    const toolResults = frames
      .filter((f) => f.type === "user")
      .flatMap((f) => ((f.message as Json).content as ReadonlyArray<Json>))
      .filter((b) => b.type === "tool_result")
    assert.strictEqual(toolResults.length, 1, "one user frame carries the tool_result")
    assert.strictEqual(toolResults[0]!.tool_use_id, toolUse!.id)
    assert.notStrictEqual(toolResults[0]!.is_error, true)
    // The fleet reads it as the call's result: what the model was told.
    const [decoded] = decodedOf(frames, "ToolResults")
    const block = decoded!.frame.message.content[0]!
    assert.strictEqual(block.tool_use_id, toolUse!.id)
    assert.strictEqual(Protocol.toolResultText(block), toolResults[0]!.content)

    const result = onlyResult(frames)
    assert.strictEqual(result.subtype, "success")
    assert.strictEqual(result.num_turns, 2, "a tool call makes two model round trips")
    assert.match(result.result ?? "", /^TOOL_RESULT Read: /)
    assert.deepStrictEqual(result.permission_denials, [], "--allowedTools Read: no ask, no denial")
  })

  it("total_cost_usd is cumulative over the process's turns", () => {
    const costs = fixture.turns.flatMap((t) => decodedOf(t.frames, "Result")).map((r) => r.frame.total_cost_usd)
    assert.isAtLeast(costs.length, 2)
    for (let i = 1; i < costs.length; i++) assert.isAbove(costs[i]!, costs[i - 1]!)
  })
})
