from django.apps import AppConfig


class MetricsConfig(AppConfig):
    name = "metrics"
    verbose_name = "Reliability and claim metrics"

    def ready(self) -> None:
        # New outcomes of a study's labels queue the recount of the stored comparisons
        # that read them (audit.queueing: the label jobs cannot import metrics).
        from audit.queueing import label_followers_register
        from metrics.services import comparison_follow_ups

        label_followers_register(comparison_follow_ups)
