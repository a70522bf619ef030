/**
 * `flotta costs`: what a running `flotta serve`'s fleet spent, over its MCP endpoint (`flotta_costs`): the total and
 * the groups by agent (default), model, day, hour, run or any label (`--by label:team`), in a window (`--since 7d`, `--until 2025-02-01`).
 * `--csv` prints the groups as CSV (for a spreadsheet), `--json` the structured answer.
 */
import { Command, Options } from "@effect/cli"
import * as Costs from "@flotta/core/Costs"
import type { CostReport } from "@flotta/core/Costs"
import * as Operations from "@flotta/core/Operations"
import type { Option } from "effect"
import { callAndPrint, connection } from "./Connection.js"
import * as Flags from "./Flags.js"
import * as Shared from "./SharedOptions.js"

/** `flotta spawn`'s budget flags (see `maxBudgetUsd` in the core's agent options), and them as tool arguments. */
export const budgetOptions = {
  maxBudgetUsd: Flags.positiveNumber("max-budget-usd").pipe(
    Flags.optional("A budget in dollars for its turns: once spent, a new turn fails with BudgetExceeded.")
  ),
  budgetPer: Flags.choice("budget-per", ["day", "life"]).pipe(
    Flags.optional("The budget is per UTC day, or for its life (default).")
  )
}

export const budgetOf = (flags: {
  readonly maxBudgetUsd: Option.Option<number>
  readonly budgetPer: Option.Option<"day" | "life">
}) => ({ ...Shared.ifSome("maxBudgetUsd", flags.maxBudgetUsd), ...Shared.ifSome("budgetPer", flags.budgetPer) })

const usd = (value: number) => `$${value.toFixed(value >= 1 ? 2 : 4)}`

/** The groups as a table: key, spend, share of the total, turns; then the total. */
export const renderCosts = (report: CostReport): string => {
  const window = `${report.since ?? "the start"} to ${report.until ?? "now"}`
  if (report.groups.length === 0) return `No spend from ${window}.`
  const rows = report.groups.map((g) => [
    g.key ??
      (report.by === "run" ? "(no run)" : Costs.isLabelBy(report.by) ? `(no ${Costs.labelKey(report.by)})` : "(none)"),
    usd(g.costUsd),
    report.totalUsd > 0 ? `${((g.costUsd / report.totalUsd) * 100).toFixed(1)}%` : "-",
    String(g.turns)
  ])
  const header = [report.by.toUpperCase(), "COST", "SHARE", "TURNS"]
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)))
  const line = (cells: ReadonlyArray<string>) =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  ").trimEnd()
  return [
    line(header),
    ...rows.map(line),
    `Total ${usd(report.totalUsd)} in ${report.turns} turn${report.turns === 1 ? "" : "s"}, from ${window}.`
  ].join("\n")
}

const costs = Command.make(
  "costs",
  {
    ...connection,
    by: Options.text("by").pipe(
      Options.withSchema(Costs.CostBy),
      Flags.optional(
        "Group by agent (default), model, day, hour, run, or a label: label:KEY (label:team; the scheduler's " +
          "runs carry label:routine)."
      )
    ),
    since: Options.text("since").pipe(
      Flags.optional("From when: a span back from now (7d, 24h, 30m, 2w) or a date (2025-01-31). Default: all.")
    ),
    until: Options.text("until").pipe(Flags.optional("Until when (exclusive), like --since. Default: now.")),
    csv: Options.boolean("csv").pipe(Options.withDescription("Print the groups as CSV (key,cost_usd,turns)."))
  },
  (flags) =>
    callAndPrint(
      flags,
      Operations.toolName("costs"),
      {
        ...Shared.ifSome("by", flags.by),
        ...Shared.ifSome("since", flags.since),
        ...Shared.ifSome("until", flags.until)
      },
      Costs.CostReport,
      (report) => (flags.csv ? Costs.toCsv(report).trimEnd() : renderCosts(report))
    )
).pipe(
  Command.withDescription(
    "Print what the fleet of a running `flotta serve` spent: the total and the groups by agent, model, day, hour, " +
      "run or a label (label:team), biggest spender first (days and hours in order), from each finished turn's cost per model."
  )
)

export const commands = [costs] as const
