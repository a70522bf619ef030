/**
 * `flotta costs` against a real `flotta serve --simulate` (the real claude CLI against the built-in scripted model)
 * after a few turns of two agents on two models: the table by agent, `--by model --csv` and `--json`, each the sums
 * of the turns' own costs (as their transcripts give them) and what `flotta_costs` answers; a bound it cannot read
 * is refused, naming it.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { renderCosts } from "../packages/cli/src/CostsCommand.js"
import type { CostReport } from "../packages/core/src/Costs.js"
import { toCsv } from "../packages/core/src/Costs.js"
import { withServe } from "./support/serve.js"

let dir: string
beforeAll(() => {
  dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "flotta-costs-")))
})
afterAll(() => {
  fs.rmSync(dir, { recursive: true, force: true })
})

const structuredOf = <A>(result: unknown): A => {
  const r = result as { isError?: boolean; structuredContent?: unknown; content?: unknown }
  if (r.isError === true) throw new Error(`unexpected tool error: ${JSON.stringify(r.content)}`)
  return r.structuredContent as A
}

const sum = (values: ReadonlyArray<number>) => values.reduce((a, b) => a + b, 0)

describe("flotta costs against a running serve", () => {
  it("prints the spend by agent, by model as CSV, and as JSON: the sums of the turns' costs", {
    timeout: 300_000
  }, async () => {
    const config = { agents: [{ name: "scout" }, { name: "helper", model: "claude-haiku-4-5" }], store: "memory" }
    await withServe(path.join(dir, "fleet"), { config }, async (served) => {
      const mcp = await served.client()
      const call = async <A>(name: string, args: Record<string, unknown> = {}) =>
        structuredOf<A>(await mcp.callTool({ name, arguments: args }))
      // What `flotta costs` prints is checked in process (that it starts as the binary: test/cli-help.test.ts).
      const flotta = served.inProcess

      // Nothing yet: the table says so.
      const none = await flotta("costs")
      assert.strictEqual(none.code, 0, none.stderr)
      assert.strictEqual(none.stdout, "No spend from the start to now.\n")

      const asks: ReadonlyArray<readonly [string, string]> = [
        ["scout", "ECHO one"],
        ["scout", "ECHO two"],
        ["helper", "ECHO three"]
      ]
      for (const [name, text] of asks) {
        const asked = await call<{ done: boolean }>("flotta_ask", { name, text, timeoutSeconds: 45 })
        assert.isTrue(asked.done, `${name}: ${text}`)
      }
      // Each turn's own cost and model spend, as its agent's transcript keeps them.
      const turnsOf = async (name: string) =>
        (await call<{ turns: Array<{ costUsd: number; status: string; modelCosts?: Record<string, number> }> }>(
          "flotta_transcript",
          { name }
        )).turns.filter((t) => t.status === "succeeded")
      const scout = await turnsOf("scout")
      const helper = await turnsOf("helper")
      assert.strictEqual(scout.length, 2)
      assert.strictEqual(helper.length, 1)
      const spent = { scout: sum(scout.map((t) => t.costUsd)), helper: sum(helper.map((t) => t.costUsd)) }
      assert.isAbove(spent.scout, 0)
      assert.isAbove(spent.helper, 0)
      const byModel = new Map<string, number>()
      for (const turn of [...scout, ...helper]) {
        for (const [model, usd] of Object.entries(turn.modelCosts ?? { unknown: turn.costUsd })) {
          byModel.set(model, (byModel.get(model) ?? 0) + usd)
        }
      }

      // --json: the report, its sums the turns'.
      const asJson = await flotta("costs", "--json")
      assert.strictEqual(asJson.code, 0, asJson.stderr)
      const report = JSON.parse(asJson.stdout) as CostReport
      assert.strictEqual(report.by, "agent")
      assert.strictEqual(report.turns, 3)
      assert.approximately(report.totalUsd, spent.scout + spent.helper, 1e-9)
      const groups = Object.fromEntries(report.groups.map((g) => [g.key, g]))
      assert.approximately(groups["scout"]!.costUsd, spent.scout, 1e-9)
      assert.strictEqual(groups["scout"]!.turns, 2)
      assert.approximately(groups["helper"]!.costUsd, spent.helper, 1e-9)
      assert.strictEqual(groups["helper"]!.turns, 1)
      assert.deepStrictEqual(report, await call<CostReport>("flotta_costs", {}))

      // The table: a row per agent, biggest first, and the total.
      const table = await flotta("costs")
      assert.strictEqual(table.code, 0, table.stderr)
      assert.strictEqual(table.stdout, renderCosts(report) + "\n")
      assert.match(table.stdout, /^AGENT +COST +SHARE +TURNS\n/)
      assert.include(table.stdout, `Total $${report.totalUsd.toFixed(4)} in 3 turns, from the start to now.`)
      for (const name of ["scout", "helper"]) assert.match(table.stdout, new RegExp(`^${name} +\\$0\\.\\d{4} `, "m"))

      // --by model --csv: a header, a line per model, the turns' spend per model.
      const csv = await flotta("costs", "--by", "model", "--csv", "--since", "1d")
      assert.strictEqual(csv.code, 0, csv.stderr)
      const lines = csv.stdout.trimEnd().split("\n")
      assert.strictEqual(lines[0], "model,cost_usd,turns")
      const csvModels = new Map(
        lines.slice(1).map((line) => {
          const [model, usd] = line.split(",")
          return [model!, Number(usd)] as const
        })
      )
      assert.sameMembers([...csvModels.keys()], [...byModel.keys()])
      for (const [model, usd] of byModel) assert.approximately(csvModels.get(model)!, usd, 1e-6, model)
      assert.strictEqual(
        csv.stdout,
        toCsv(await call<CostReport>("flotta_costs", { by: "model", since: "1d" }))
      )

      // A bound it cannot read: refused, naming the flag's field.
      const bad = await flotta("costs", "--since", "yesterday")
      assert.notStrictEqual(bad.code, 0)
      assert.match(bad.stderr, /InvalidSpec|since/)
    })
  })
})
