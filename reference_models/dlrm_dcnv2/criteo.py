"""Criteo 1TB Click Logs' shape as MLPerf DLRM-DCNv2 uses it: constants only, so that the options (which
the registry imports for every command) import no NumPy or torch.

    python -c "from reference_models.dlrm_dcnv2.criteo import MULTI_HOT_SIZES; print(sum(MULTI_HOT_SIZES))"
"""
DENSE_FEATURES = 13
# ids per sample of each sparse feature in the multi-hot dataset (the reference's --multi_hot_sizes)
MULTI_HOT_SIZES = (3, 2, 1, 2, 6, 1, 1, 1, 1, 7, 3, 8, 1, 6, 9, 5, 1, 1, 1, 12, 100, 27, 10, 3, 1, 1)
# the reference's --num_embeddings_per_feature: Criteo 1TB's cardinalities, the five largest capped at 40M
REFERENCE_CARDINALITIES = (40000000, 39060, 17295, 7424, 20265, 3, 7122, 1543, 63, 40000000, 3067956, 405282, 10,
                           2209, 11938, 155, 4, 976, 14, 40000000, 40000000, 40000000, 590152, 12973, 108, 36)
REFERENCE_DAYS = 24  # days 0-22 train; day 23 holds the validation and test halves
VALIDATION_SAMPLES = 89137319  # the first half of day 23, which closed_dlrm_dcnv2.yaml's eval_samples requires
