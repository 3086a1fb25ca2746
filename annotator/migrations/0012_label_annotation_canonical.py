"""Each label's annotation as its canonical text (issue 18, the release export):
``annotator_label.annotation_canonical``, the exact bytes its record embeds, made when
the label is inserted (``audit.fields.CanonicalJsonText``), so that a release writes the
record line from stored bytes instead of serializing the annotation again.

Labels are append-only (0003's trigger refuses UPDATE), so the labels stored before this
migration get their text here, once: the rule is lifted for the duration of the fill and
put back as it was, in the migration's transaction. The text is made from the stored
annotation, as the release would serialize it; a release still writes a record only when
its bytes hash to the label's record digest.
"""

from django.db import migrations

import audit.fields
from audit.triggers import Immutable, install, uninstall

#: 0003's rule on UPDATE (its DELETE rule and 0005's TRUNCATE rule stay in place).
UPDATE_RULE = Immutable(
    "annotator_label",
    operations=("UPDATE",),
    reason="submitted labels are append-only: submit a revision",
)
BATCH = 2000


def fill(apps, schema_editor) -> None:
    Label = apps.get_model("annotator", "Label")
    if not Label.objects.filter(annotation_canonical__isnull=True).exists():
        return
    text_of = audit.fields.CanonicalJsonText.text_of
    table = schema_editor.quote_name(Label._meta.db_table)
    uninstall(UPDATE_RULE)(apps, schema_editor)
    last = 0
    with schema_editor.connection.cursor() as cursor:
        while True:
            rows = list(
                Label.objects.filter(id__gt=last, annotation_canonical__isnull=True)
                .order_by("id")
                .values_list("id", "annotation")[:BATCH]
            )
            if not rows:
                break
            last = rows[-1][0]
            texts = [(pk, text_of(annotation)) for pk, annotation in rows]
            texts = [(pk, text) for pk, text in texts if text is not None]
            if not texts:
                continue
            if schema_editor.connection.vendor == "postgresql":
                values = ", ".join(["(%s, %s)"] * len(texts))
                cursor.execute(
                    f"UPDATE {table} SET annotation_canonical = v.text "  # noqa: S608
                    f"FROM (VALUES {values}) AS v(id, text) WHERE {table}.id = v.id",
                    [value for pair in texts for value in pair],
                )
            else:
                cursor.executemany(
                    f"UPDATE {table} SET annotation_canonical = %s WHERE id = %s",  # noqa: S608
                    [(text, pk) for pk, text in texts],
                )
    install(UPDATE_RULE)(apps, schema_editor)


class Migration(migrations.Migration):
    dependencies = [("annotator", "0011_quality_summary")]

    operations = [
        migrations.AddField(
            model_name="label",
            name="annotation_canonical",
            field=audit.fields.CanonicalJsonText(source="annotation"),
        ),
        migrations.RunPython(fill, migrations.RunPython.noop),
    ]
