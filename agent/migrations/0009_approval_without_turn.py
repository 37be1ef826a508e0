"""An approval may have no turn: `run_agent(session)` run without one (the engine used outside the
HTTP API) pauses for a person as a turn does. Before, such a run failed at the approval's INSERT."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('agent', '0008_fewer_indexes'),
    ]

    operations = [
        migrations.AlterField(
            model_name='approval',
            name='turn',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='approvals', to='agent.turn'),
        ),
    ]
