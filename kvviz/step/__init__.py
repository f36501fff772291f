"""The step-through stage: the stepping engine over DynamicCache, its torch-free records, the stage's view-model, attention patterns."""
