export * as Simulator from "./Simulator.js"
