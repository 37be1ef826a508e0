from django.apps import AppConfig


class BlogConfig(AppConfig):
    name = "blog"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.db.models.signals import post_delete, post_save, pre_delete

        from agent.signals import message_received
        from blog.chat import drop_chats_with_blog, register_tools
        from blog.grants import drop_grants_with_seat
        from blog.live import first_message, seat_changed
        from blog.models import Blog, Seat

        register_tools()
        pre_delete.connect(drop_chats_with_blog, sender=Blog, dispatch_uid="blog.drop_chats_with_blog")
        post_delete.connect(drop_grants_with_seat, sender=Seat, dispatch_uid="blog.drop_grants_with_seat")
        post_save.connect(seat_changed, sender=Seat, dispatch_uid="blog.seat_changed.save")
        post_delete.connect(seat_changed, sender=Seat, dispatch_uid="blog.seat_changed.delete")
        message_received.connect(first_message, dispatch_uid="blog.live.first_message")
