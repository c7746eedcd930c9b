"""What a Galera cluster accepts and reports, as facts the service and the workers share.

responses (what a trial measures), workloads (sysbench's and the project's own, with their
options), kinds (the factors and ranges of each kind of target), provider_options (the Galera
provider option catalogue), server_variables, refusals and variable_policy (the server variables
a factor may name, those refused, and an operator's changes), restart_settings (what a server
reads only when it starts), setting_checks (a factor's values against those catalogues) and
target_spec (`TargetSpec`: the operator's target and the checks of a factor space against it).

Standard library and `experiments` only, no I/O: the API checks experiments with it at
submission, the workers again before they run a trial.
"""
