/**
 * Runs every benchmark in sequence, each in a process of its own (a clean heap for the memory figures, and
 * `--expose-gc`), then writes bench/RESULTS.md from their results.
 *   npm run bench                          all of them
 *   npm run bench -- report-log            only some (the others keep their last results from bench/out/)
 *   npm run bench -- --report              only rewrite RESULTS.md from bench/out/
 */
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import type { BenchResult, Machine } from "./lib.js"
import { idleShare, machine, markdownTable, OUT_DIR, ROOT, textTable } from "./lib.js"

/** The four of the issue first, in this order; then any other bench/*.ts that others add. */
const OWN = ["turn-overhead", "fleet-scale", "report-log", "real-scale"]
const RESULTS = path.join(ROOT, "bench", "RESULTS.md")
const MARK = "<!-- written by bench/run.ts -->"
const BENCHMARKS = [
  ...OWN,
  ...fs.readdirSync(path.join(ROOT, "bench"))
    .filter((f) => f.endsWith(".ts") && !["lib.ts", "run.ts"].includes(f))
    .map((f) => f.slice(0, -3))
    .filter((id) => !OWN.includes(id))
    .sort()
]

/** A benchmark that keeps its own section of RESULTS.md up to date; its section is left as it is. */
const writesOwnSection = (id: string) =>
  fs.readFileSync(path.join(ROOT, "bench", `${id}.ts`), "utf8").includes("RESULTS.md")

/** Sections of the current RESULTS.md that this script did not write. */
const foreignSections = () => {
  if (!fs.existsSync(RESULTS)) return []
  return fs.readFileSync(RESULTS, "utf8").split(/^(?=## )/m).slice(1)
    .filter((section) => !section.includes(MARK))
    .map((section) => section.trimEnd())
}

/** Lets the previous benchmark's children finish exiting before the next one measures (at most 30 s). */
const waitForQuiet = async () => {
  for (let i = 0; i < 30; i++) if ((await idleShare(1000)) > 0.85) return
}

const runOne = (id: string) =>
  new Promise<number | null>((resolve) => {
    const child = spawn(process.execPath, ["--expose-gc", "--import", "tsx", path.join(ROOT, "bench", `${id}.ts`)], {
      cwd: ROOT,
      stdio: "inherit"
    })
    child.once("exit", (code) => resolve(code))
  })

const load = (id: string): BenchResult | undefined => {
  try {
    return JSON.parse(fs.readFileSync(path.join(OUT_DIR, `${id}.json`), "utf8")) as BenchResult
  } catch {
    return undefined
  }
}

/** Other work had most of the CPU when the benchmark started. */
const busy = (r: BenchResult) => (r.idleAtStart ?? 1) < 0.7

const describe = (m: Machine) =>
  `${m.cpu} × ${m.cpus} CPUs, ${m.memory} RAM, Node ${m.node}, claude CLI ${m.claude}, ${m.os}`

const render = (
  results: ReadonlyArray<BenchResult>,
  failed: ReadonlyArray<string>,
  here: Machine,
  foreign: ReadonlyArray<string>
) => {
  const misses = results.flatMap((r) =>
    r.rows.filter((x) => x.verdict === "miss").map((x) => `${r.title}: ${x.figure}`)
  )
  const dates = results.map((r) => r.date).sort()
  const lines = [
    "# Benchmarks",
    "",
    `Written ${new Date().toISOString()} by \`npm run bench\` (bench/run.ts); figures measured ` +
    (dates.length === 0 ? "—" : `${dates[0]} … ${dates[dates.length - 1]}`) + ".",
    "",
    `Machine: ${describe(here)}.`,
    "",
    "Every figure sits next to a baseline measured in the same run; the ratio is figure ÷ baseline. " +
    "Benchmarks are not tests: `npm test` does not run them. Each can run alone: `npx tsx bench/<name>.ts`.",
    "",
    ...(results.some((r) => busy(r))
      ? [
        "**The machine was busy** (less than 70% of the CPU idle in the second before the start) when these " +
        `started: ${results.filter(busy).map((r) => r.title).join("; ")}. Other work shared the CPUs, so their ` +
        "timing figures are pessimistic and vary between runs; heap figures and process counts are not affected.",
        ""
      ]
      : []),
    "## Summary",
    "",
    MARK,
    "",
    "| Benchmark | Targets met | Missed |",
    "| --- | --- | --- |",
    ...results.map((r) => {
      const targets = r.rows.filter((x) => x.verdict !== "info")
      const missed = targets.filter((x) => x.verdict === "miss")
      return `| ${r.title} | ${targets.length - missed.length} of ${targets.length} | ` +
        `${missed.length === 0 ? "none" : missed.map((x) => x.figure).join("; ")} |`
    }),
    ...failed.map((id) => `| ${id} | — | **did not complete** (see the console output) |`),
    "",
    misses.length === 0 ? "All targets met." : `**Missed targets (${misses.length}):** ${misses.join("; ")}. ` +
      "Each benchmark's notes below say what the cause is believed to be.",
    ""
  ]
  for (const r of results.filter((x) => !writesOwnSection(x.id))) {
    lines.push(
      `## ${r.title}`,
      "",
      MARK,
      "",
      `Measured ${r.date} in ${r.seconds.toFixed(1)} s; at the start ${Math.round((r.idleAtStart ?? 1) * 100)}% of ` +
        `the CPU was idle (load average ${(r.loadAtStart ?? 0).toFixed(2)})` +
        (busy(r) ? ", **the machine was busy**" : "") +
        (describe(r.machine) === describe(here) ? "." : ` on ${describe(r.machine)}.`),
      "",
      r.method,
      "",
      markdownTable(r),
      ""
    )
    if (r.notes.length > 0) lines.push(...r.notes.map((n) => (n.startsWith("  ") ? `  - ${n.trim()}` : `- ${n}`)), "")
  }
  for (const section of foreign) lines.push(section, "")
  return lines.join("\n")
}

const args = process.argv.slice(2)
const reportOnly = args.includes("--report")
const selected = args.filter((a) => !a.startsWith("--"))
for (const id of selected) {
  if (!BENCHMARKS.includes(id)) {
    console.error(`unknown benchmark "${id}"; known: ${BENCHMARKS.join(", ")}`)
    process.exit(2)
  }
}
const toRun = reportOnly ? [] : selected.length > 0 ? selected : BENCHMARKS

const failed: Array<string> = []
for (const id of toRun) {
  await waitForQuiet()
  console.log(`\n### ${id}`)
  const code = await runOne(id)
  if (code !== 0) {
    console.error(`${id} exited with code ${code}`)
    failed.push(id)
  }
}

const results = BENCHMARKS.flatMap((
  id
) => (failed.includes(id) ? [] : [load(id)].flatMap((r) => (r === undefined ? [] : [r]))))
console.log("\n" + results.map(textTable).join("\n\n"))
fs.writeFileSync(RESULTS, render(results, failed, machine(), foreignSections()))
console.log(`\nwrote ${path.relative(process.cwd(), RESULTS)}`)
if (failed.length > 0) process.exitCode = 1
