/** The files evaluation writes into a run's folder besides the metrics (federated-eval.ts), so run-folder.ts knows them as the run's. */
export const evaluationFiles = {
  /** The test set's confusion matrix at the latest central evaluation. */
  confusion: "confusion.csv",
  /** The evaluated clients' held-out confusion matrix, summed over them, at the latest federated evaluation. */
  clientConfusion: "client-confusion.csv",
  /** Each evaluated client's held-out metrics at the latest federated evaluation. */
  clientMetrics: "client-metrics.csv",
  /** Personalization evaluation: each client before and after fine-tuning, and the distributions. */
  personalization: "personalization.csv",
  personalizationSummary: "personalization.json",
} as const;
