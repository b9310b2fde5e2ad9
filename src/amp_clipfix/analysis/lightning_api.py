"""The names of Lightning's API the analysis and the rules read by name: the Trainer's and
Fabric's arguments, LightningModule's manual-optimization methods and the hook Lightning calls
right after unscaling. Library knowledge, kept with the registry (names.py) and never in a rule:
rules never import rules, and two rules that read one argument read it from here.
"""

from __future__ import annotations

# The Trainer's and Fabric's arguments (names.py's `Entry` says which object takes which).
PRECISION_ARGUMENT = "precision"
STRATEGY_ARGUMENT = "strategy"
CLIP_VAL_ARGUMENT = "gradient_clip_val"
CLIP_ALGORITHM_ARGUMENT = "gradient_clip_algorithm"
TRAINER_CLIP_ARGUMENTS = (CLIP_VAL_ARGUMENT, CLIP_ALGORITHM_ARGUMENT)

# LightningModule's manual-optimization methods, the argument of `clip_gradients` that bounds
# the gradients, and the hook Lightning calls after unscaling, before the optimizer steps.
MODULE_BACKWARD = "manual_backward"
MODULE_CLIP = "clip_gradients"
MODULE_CLIP_BOUND = "gradient_clip_val"
CLIP_HOOK = "on_before_optimizer_step"

# The Trainer arguments Lightning 2.0 removed: in pytorch-lightning 1.9.5's `Trainer.__init__`,
# in neither lightning 2.0.9.post0's nor 2.6.6's, whose Trainer raises TypeError on each. A call
# (or a config's trainer section) that passes one runs on 1.x only, whatever the pins say.
# `amp_backend` / `amp_level` are removed too, but ACF010 migrates those (its fix removes them).
TRAINER_ARGUMENTS_REMOVED_IN_2_0 = frozenset(
    {
        "auto_lr_find",
        "auto_scale_batch_size",
        "auto_select_gpus",
        "gpus",
        "ipus",
        "move_metrics_to_cpu",
        "multiple_trainloader_mode",
        "num_processes",
        "replace_sampler_ddp",
        "resume_from_checkpoint",
        "tpu_cores",
        "track_grad_norm",
    }
)
