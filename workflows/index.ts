// Every workflow the worker runs, re-exported for the worker's bundle. One folder per workflow.
export {};
