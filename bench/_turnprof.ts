import * as fs from "node:fs"
import { Session } from "node:inspector/promises"
import { createFleet } from "../packages/core/src/Client.js"
import { FAKE, REALISTIC_ENV } from "./lib.js"
const fleet = createFleet({ executable: { command: process.execPath, prefixArgs: [FAKE] }, env: REALISTIC_ENV })
await fleet.spawn("bench")
for (let i = 0; i < 500; i++) await fleet.ask("bench", "hello")
const session = new Session()
session.connect()
await session.post("Profiler.enable")
await session.post("Profiler.setSamplingInterval", { interval: 50 })
await session.post("Profiler.start")
const t = performance.now()
const N = 3000
for (let i = 0; i < N; i++) await fleet.ask("bench", "hello")
const el = performance.now() - t
const { profile } = await session.post("Profiler.stop")
fs.writeFileSync("/tmp/x/turn.cpuprofile", JSON.stringify(profile))
console.log("per turn ms", el / N)
await fleet.shutdown()
