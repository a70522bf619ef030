export * as Dashboard from "./Dashboard.js"
export * as DashboardConfig from "./DashboardConfig.js"
