package nccl

// LaunchFrom is LaunchFromEnv reading getenv, for the tests.
var LaunchFrom = launchFrom
