/**
 * What a person is told when what they wrote does not decode: every problem at its path, in words. An unknown key
 * names the key it probably meant; a union's alternatives are said once; a member that got past the kind of the
 * value says what is wrong within it instead; a schema's own message wins.
 */
import { assert, describe, it } from "@effect/vitest"
import { Either, Schema } from "effect"
import * as Decode from "../src/Decode.js"

const Section = Schema.Struct({
  mode: Decode.exact(Schema.Literal("fast", "slow")),
  count: Decode.exact(Schema.Number.pipe(Schema.int(), Schema.positive())),
  label: Schema.optional(Schema.String),
  enabled: Decode.exact(Schema.Boolean),
  tags: Decode.exact(Schema.Array(Schema.String)),
  policy: Decode.exact(Schema.Union(
    Schema.Literal("open", "closed"),
    Schema.Struct({ allow: Schema.Array(Schema.String), deny: Decode.exact(Schema.Array(Schema.String)) }).pipe(
      Schema.filter((p) =>
        !(p.deny ?? []).some((t) => p.allow.includes(t)) || "a tool cannot be both allowed and denied"
      )
    )
  )),
  code: Decode.exact(Schema.String.pipe(Schema.pattern(/^[a-z]+$/, { message: () => "lower-case letters only" })))
})

const said = (input: unknown) =>
  Either.match(Decode.decodeAt(Section, input, "section"), {
    onLeft: (issues) => issues.map((issue) => `${issue.path}: ${issue.message}`),
    onRight: () => []
  })

describe("Decode: what was wrong, in words", () => {
  it("an unknown key: the known key it probably meant, else every known key", () => {
    assert.deepStrictEqual(said({ mdoe: "fast" }), ["section.mdoe: unknown field; did you mean \"mode\"?"])
    assert.deepStrictEqual(said({ Count: 2 }), ["section.Count: unknown field; did you mean \"count\"?"])
    assert.deepStrictEqual(said({ tag: [] }), ["section.tag: unknown field; did you mean \"tags\"?"])
    assert.deepStrictEqual(said({ colour: "red" }), [
      "section.colour: unknown field; expected one of mode, count, label, enabled, tags, policy, code"
    ])
    assert.deepStrictEqual(said({ policy: { alow: [] } }), [
      "section.policy.alow: unknown field; did you mean \"allow\"?",
      "section.policy.allow: is missing"
    ])
  })

  it("a wrong type or value: what was expected and what was given", () => {
    assert.deepStrictEqual(said({ mode: "quick" }), ["section.mode: expected \"fast\" or \"slow\", got \"quick\""])
    assert.deepStrictEqual(said({ count: "two" }), ["section.count: expected a number, got \"two\""])
    assert.deepStrictEqual(said({ count: -1 }), ["section.count: expected a positive number, got -1"])
    assert.deepStrictEqual(said({ count: 1.5 }), ["section.count: expected an integer, got 1.5"])
    // An optional field is never "expected undefined".
    assert.deepStrictEqual(said({ label: 3 }), ["section.label: expected a string, got 3"])
    assert.deepStrictEqual(said({ enabled: "yes" }), ["section.enabled: expected true or false, got \"yes\""])
    assert.deepStrictEqual(said({ tags: "a" }), ["section.tags: expected a list, got \"a\""])
    assert.deepStrictEqual(said({ tags: ["a", 2] }), ["section.tags[1]: expected a string, got 2"])
    assert.deepStrictEqual(said({ code: "ABC" }), ["section.code: lower-case letters only"])
    assert.deepStrictEqual(said("text"), ["section: expected an object, got \"text\""])
  })

  it("a union: its alternatives said once, or the problem within the member the value is", () => {
    assert.deepStrictEqual(said({ policy: "ajar" }), [
      "section.policy: expected \"open\", \"closed\" or { allow, deny? }, got \"ajar\""
    ])
    assert.deepStrictEqual(said({ policy: { allow: "Read" } }), ["section.policy.allow: expected a list, got \"Read\""])
    assert.deepStrictEqual(said({ policy: { allow: ["Read"], deny: ["Read"] } }), [
      "section.policy: a tool cannot be both allowed and denied"
    ])
  })

  it("every problem at once, each at its own path; a long value cut short", () => {
    assert.deepStrictEqual(said({ mode: 1, count: 0, extra: true }), [
      "section.extra: unknown field; expected one of mode, count, label, enabled, tags, policy, code",
      "section.mode: expected \"fast\" or \"slow\", got 1",
      "section.count: expected a positive number, got 0"
    ])
    assert.strictEqual(Decode.shown("x".repeat(100)), `"${"x".repeat(56)}...`)
    assert.strictEqual(Decode.shown(undefined), "nothing")
  })

  it("a name that is not there: the closest one, else the ones there are", () => {
    assert.strictEqual(
      Decode.unknownName("run template", "isue-runner", ["issue-runner", "triage"], "agents"),
      "no run template named \"isue-runner\" in agents; did you mean \"issue-runner\"?"
    )
    assert.strictEqual(
      Decode.unknownName("routine", "nightly", ["fix-ci", "morning-scan"], "routines"),
      "no routine named \"nightly\" in routines (there: fix-ci, morning-scan)"
    )
    assert.strictEqual(
      Decode.unknownName("session", "scout", [], "agents"),
      "no session named \"scout\" (agents has none)"
    )
    assert.strictEqual(Decode.closest("tick", ["timezone", "tickMs"]), "tickMs")
    assert.strictEqual(Decode.closest("modle", ["model", "mode"]), "model")
    assert.isUndefined(Decode.closest("xyz", ["model", "timeout"]))
  })
})
