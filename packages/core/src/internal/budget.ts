/**
 * A session's budget (`maxBudgetUsd`, `budgetPer`): what its turns have spent, for its life and on the current
 * UTC day, and the refusal of a new turn once that reaches the budget. The check is made as a turn is about to be
 * sent: a turn in flight when the budget is crossed finishes (its cost counts), and the next one is refused with
 * `BudgetExceeded` and a `budget_exceeded` entry in the report log. The spend is counted again from the store's
 * turns after a restart of the host, so a restart does not reset it.
 */
import { BudgetExceeded, InvalidSpec } from "../Errors.js"
import type { AgentOptions } from "./agentOptions.js"
import type { AgentContext, Spend, Turn } from "./agentState.js"
import { iso } from "./turnRecord.js"

export const empty = (): Spend => ({ lifeUsd: 0, day: "", dayUsd: 0 })

/** What is wrong with an agent's budget options, naming the field, when something is. */
export const invalid = (options: AgentOptions): InvalidSpec | undefined => {
  const { budgetPer, maxBudgetUsd } = options
  if (maxBudgetUsd !== undefined && !(typeof maxBudgetUsd === "number" && maxBudgetUsd > 0 && isFinite(maxBudgetUsd))) {
    return new InvalidSpec({ path: "maxBudgetUsd", reason: "a budget in dollars: a number above 0" })
  }
  if (budgetPer !== undefined && budgetPer !== "day" && budgetPer !== "life") {
    return new InvalidSpec({ path: "budgetPer", reason: `"day" or "life", not ${JSON.stringify(budgetPer)}` })
  }
  if (budgetPer !== undefined && maxBudgetUsd === undefined) {
    return new InvalidSpec({ path: "budgetPer", reason: "a budget's period needs the budget (maxBudgetUsd)" })
  }
  return undefined
}

/** Counts a turn's cost, finished at `at` (ISO). */
export const count = (spend: Spend, costUsd: number, at: string): void => {
  if (!(costUsd > 0)) return
  spend.lifeUsd += costUsd
  const day = at.slice(0, 10)
  if (day === spend.day) spend.dayUsd += costUsd
  else if (day > spend.day) {
    spend.day = day
    spend.dayUsd = costUsd
  }
}

/** What counts against a budget `per` day or for its life, at `now`. */
export const spent = (spend: Spend, per: "day" | "life", now: number): number =>
  per === "life" ? spend.lifeUsd : spend.day === iso(now).slice(0, 10) ? spend.dayUsd : 0

/** What an agent has spent against its budget now, and the budget, when it has one: for `info`. */
export const view = (ctx: Pick<AgentContext, "options" | "state">, now: number) => {
  const budgetUsd = ctx.options.maxBudgetUsd
  if (budgetUsd === undefined) return undefined
  const per = ctx.options.budgetPer ?? "life"
  return { budgetUsd, per, spentUsd: spent(ctx.state.spend, per, now) }
}

/**
 * The error a turn about to be sent is refused with, when the agent has reached its budget (a `clear`, which
 * costs nothing, is never refused); the report log says so.
 */
export const refusal = (ctx: AgentContext, turn: Turn, now: number): BudgetExceeded | undefined => {
  const budget = view(ctx, now)
  if (budget === undefined || turn.kind === "clear" || budget.spentUsd < budget.budgetUsd) return undefined
  ctx.reports.unsafePost(ctx.name, "budget_exceeded", budget, turn.id, now)
  return new BudgetExceeded({
    name: ctx.name,
    costUsd: budget.spentUsd,
    turns: 0,
    sessionId: ctx.state.sessionId,
    budgetUsd: budget.budgetUsd,
    per: budget.per
  })
}
