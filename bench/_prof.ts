import { createFleet } from "../packages/core/src/Client.js"
import { FAKE, sortedCopy, percentile } from "./lib.js"
const fleet = createFleet({ executable: { command: process.execPath, prefixArgs: [FAKE] } })
await fleet.spawn("a")
for (let i = 0; i < 500; i++) await fleet.ask("a", "hello")
const ts: number[] = []
for (let i = 0; i < Number(process.env.N ?? 5000); i++) {
  const t = performance.now()
  await fleet.ask("a", "hello")
  ts.push(performance.now() - t)
}
const s = sortedCopy(ts)
console.log([0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99].map((p) => `p${p * 100}=${percentile(s, p).toFixed(3)}`).join(" "))
// histogram
const h = new Map<number, number>()
for (const t of ts) { const b = Math.floor(t * 4) / 4; h.set(b, (h.get(b) ?? 0) + 1) }
console.log([...h.entries()].sort((a, b) => a[0] - b[0]).slice(0, 20).map(([b, c]) => `${b}:${c}`).join(" "))
await fleet.shutdown()
